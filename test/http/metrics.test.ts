import { expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase, createTestRuntime } from '../support/runtime.js';
import { issueTestToken } from '../support/tokens.js';
import { postGraphQL } from '../support/graphql.js';
import { startServer } from '../../src/server.js';
import { DATABASE_KINDS } from '../support/databases.js';

const METRICS_TOKEN = 'metrics-token-of-some-length';

/** The value of one sample line, e.g. `fieldgate_http_requests_total{method="GET",…}`. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && wanted.every((w) => l.includes(w)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describeEachDatabase(
  'GET /metrics behind METRICS_TOKEN',
  (context) => {
    const scrape = async () => {
      const res = await request(context().app).get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toContain('text/plain');
      return res.text;
    };

    it('refuses a scrape without the token, or with a wrong one', async () => {
      for (const auth of [undefined, 'Bearer nope', `Bearer ${METRICS_TOKEN}x`, METRICS_TOKEN]) {
        let req = request(context().app).get('/metrics');
        if (auth) req = req.set('Authorization', auth);
        const res = await req;
        expect(res.status).toBe(401);
        expect(res.headers['www-authenticate']).toContain('Bearer');
        expect(res.text).not.toContain('fieldgate_');
      }
    });

    it('counts requests by route template, not by raw path, so ids do not become labels', async () => {
      for (const id of [1, 2, 3, 987654]) await request(context().app).get(`/products/${id}`);
      await request(context().app).get('/no/such/path/12345');
      const text = await scrape();
      expect(sample(text, 'fieldgate_http_requests_total', { method: 'GET', route: '/products/:id', status: '401' })).toBeGreaterThanOrEqual(4);
      expect(text).not.toContain('987654');
      expect(text).not.toContain('12345');
      expect(sample(text, 'fieldgate_http_requests_total', { route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
      expect(text).toContain('fieldgate_http_request_duration_seconds_bucket{');
    });

    it('labels every spelling of a path, in any case or with a trailing slash, with the one route template', async () => {
      const spellings = ['/token', '/TOKEN', '/ToKeN', '/token/', '/Authorize', '/AUTHORIZE', '/authorize', '/.WELL-KNOWN/jwks.json', '/.well-known/JWKS.json'];
      for (const path of spellings) {
        await request(context().app).get(path);
        await request(context().app).post(path).type('form').send({ grant_type: 'nope' });
      }
      const routes = new Set(
        (await scrape())
          .split('\n')
          .filter((line) => line.startsWith('fieldgate_http_requests_total{'))
          .map((line) => /route="([^"]*)"/.exec(line)![1]!),
      );
      for (const route of routes) expect(route).toBe(route.toLowerCase());
      expect([...routes].filter((route) => /token/.test(route))).toEqual(['/token']);
      expect([...routes].filter((route) => /authorize/.test(route))).toEqual(['/authorize']);
      expect([...routes].filter((route) => /jwks/i.test(route))).toEqual(['/.well-known/jwks.json']);
    });

    it('counts security events and observes GraphQL operation cost', async () => {
      const before = sample(await scrape(), 'fieldgate_security_events_total', { event: 'client_authentication_failed' }) ?? 0;
      await request(context().app).post('/token').auth('no-such-client', 'x').type('form').send({ grant_type: 'refresh_token', refresh_token: 'x' });
      const { token } = await issueTestToken(context().runtime);
      expect((await postGraphQL(context().app, token, '{ products(limit: 5) { id } }')).status).toBe(200);
      const text = await scrape();
      expect(sample(text, 'fieldgate_security_events_total', { event: 'client_authentication_failed' })).toBe(before + 1);
      expect(text).toMatch(/^fieldgate_graphql_operation_cost_count \d+/m);
    });
  },
  { METRICS_TOKEN },
);

describeEachDatabase('metrics off by default', (context) => {
  it('does not serve /metrics', async () => {
    expect((await request(context().app).get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`)).status).toBe(404);
  });
});

it('METRICS_PORT serves /metrics on a listener of its own, not on the main port', async () => {
  const context = await createTestRuntime(DATABASE_KINDS[0]!, { PORT: '0', METRICS_PORT: '0' });
  const server = await startServer(context.runtime);
  try {
    expect(server.metricsPort).toBeGreaterThan(0);
    const res = await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('fieldgate_http_requests_total');
    expect((await fetch(`http://127.0.0.1:${server.metricsPort}/healthz`)).status).toBe(404);
    expect((await fetch(`${server.url}/metrics`)).status).toBe(404);
  } finally {
    await server.close();
  }
});

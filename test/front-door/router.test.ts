import { expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase } from '../support/runtime.js';

describeEachDatabase(
  'front door in demo mode',
  (context) => {
    it('serves / with the sign-in link, the API reference and GraphiQL, under a script-free CSP', async () => {
      const res = await request(context().app).get('/');
      expect(res.status).toBe(200);
      expect(res.type).toBe('text/html');
      expect(res.text).toContain('href="/api-reference"');
      expect(res.text).toContain('href="/graphql"');
      expect(res.text).toMatch(/id="sign-in" href="[^"]*\/authorize\?/);
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
      expect(res.headers['content-security-policy']).not.toContain('script-src');
    });

    it('answers a browser GET /graphql with GraphiQL from this origin, not a 406', async () => {
      const res = await request(context().app).get('/graphql').set('Accept', 'text/html,application/xhtml+xml,*/*;q=0.8');
      expect(res.status).toBe(200);
      expect(res.text).toContain('/assets/graphiql/yoga-graphiql.umd.js');
      expect(res.text).not.toMatch(/unpkg|https?:\/\//);
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    });

    it('serves the API reference and its bundles from installed packages', async () => {
      const page = await request(context().app).get('/api-reference');
      expect(page.status).toBe(200);
      expect(page.text).not.toMatch(/https?:\/\//);
      for (const asset of ['/assets/swagger-ui/swagger-ui-bundle.js', '/assets/graphiql/graphiql.css', '/assets/fieldgate/api-reference.js']) {
        expect((await request(context().app).get(asset)).status, asset).toBe(200);
      }
      const escape = await request(context().app).get('/assets/fieldgate/..%2f..%2fpackage.json');
      expect(escape.status).toBe(404);
    });

    it('still answers GraphQL requests from programs as before', async () => {
      const res = await request(context().app).get('/graphql').query({ query: '{ __typename }' }).set('Accept', 'application/json');
      expect(res.status).toBe(401);
    });
  },
  { DEMO: 'true' },
);

describeEachDatabase('front door outside demo mode', (context) => {
  it('serves none of it by default', async () => {
    expect((await request(context().app).get('/')).status).toBe(404);
    expect((await request(context().app).get('/api-reference')).status).toBe(404);
    expect((await request(context().app).get('/assets/swagger-ui/swagger-ui-bundle.js')).status).toBe(404);
    expect((await request(context().app).get('/graphql').set('Accept', 'text/html')).status).toBe(406);
  });
});

describeEachDatabase(
  'front door turned on without the demo',
  (context) => {
    it('serves / without a demo sign-in link', async () => {
      const res = await request(context().app).get('/');
      expect(res.status).toBe(200);
      expect(res.text).not.toContain('id="sign-in"');
    });
  },
  { DEMO: 'false', FRONT_DOOR: 'true' },
);

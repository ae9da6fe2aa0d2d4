/** Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document): fetched SSRF-safe, validated, cached within bounds. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { describeEachDatabase } from '../support/runtime.js';
import { ClientMetadataDocuments } from '../../src/oauth/client-metadata-documents.js';
import { InvalidClientMetadata, RateLimited, ServiceBusy } from '../../src/oauth/errors.js';
import { IpRequestThrottle } from '../../src/oauth/ip-request-throttle.js';
import { pkcePair } from '../support/oauth.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

let server: http.Server;
let base: string;
const routes = new Map<string, Handler>();
const hits = new Map<string, number>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    hits.set(req.url!, (hits.get(req.url!) ?? 0) + 1);
    const handler = routes.get(req.url!);
    if (handler) handler(req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

let sequence = 0;
/** Serves `body(url)` at a fresh path and returns the document URL. */
function serve(body: (url: string) => unknown, headers: Record<string, string> = {}): string {
  const path = `/clients/${++sequence}.json`;
  const url = `${base}${path}`;
  routes.set(path, (_req, res) => {
    const text = typeof body(url) === 'string' ? (body(url) as string) : JSON.stringify(body(url));
    res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(text);
  });
  return url;
}

const documentFor = (url: string) => ({ client_id: url, client_name: 'Doc Agent', redirect_uris: ['http://127.0.0.1/callback'], token_endpoint_auth_method: 'none' });

describeEachDatabase(
  'client ID metadata documents',
  (context) => {
    const documents = (options: Partial<ConstructorParameters<typeof ClientMetadataDocuments>[1]> = {}) =>
      new ClientMetadataDocuments(context().runtime.clients, { allowPrivate: true, ...options });

    async function refused(promise: Promise<unknown>, reason: RegExp): Promise<void> {
      const error = await promise.then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidClientMetadata);
      expect((error as InvalidClientMetadata).code).toBe('invalid_client_metadata');
      expect((error as Error).message).toMatch(reason);
    }

    it('stores the client a valid document describes, under its URL, as a public metadata_document client', async () => {
      const url = serve((u) => ({
        ...documentFor(u),
        logo_uri: 'https://agent.example/logo.png',
        post_logout_redirect_uris: ['https://agent.example/bye'],
        frontchannel_logout_uri: 'http://127.0.0.1/fc',
        extension: { ignored: true },
      }));
      const client = await documents().resolve(url);
      expect(client).toMatchObject({ id: url, name: 'Doc Agent', registrationType: 'metadata_document', isPublic: true, secretHash: null, logoUri: 'https://agent.example/logo.png' });
      // The same metadata reader as /register: logout settings come with the document.
      expect(client).toMatchObject({ postLogoutRedirectUris: ['https://agent.example/bye'], frontchannelLogoutUri: 'http://127.0.0.1/fc', backchannelLogoutUri: null });
    });

    it.each([
      ['a client_id other than its URL', (u: string) => ({ ...documentFor(u), client_id: 'https://elsewhere.example/c.json' }), /client_id equal to its own URL/],
      ['a client_secret', (u: string) => ({ ...documentFor(u), client_secret: 's3cret' }), /client_secret/],
      ['a secret-based auth method', (u: string) => ({ ...documentFor(u), token_endpoint_auth_method: 'client_secret_basic' }), /none/],
      ['a javascript: redirect URI', (u: string) => ({ ...documentFor(u), redirect_uris: ['javascript:alert(1)'] }), /redirect URI/],
      ['a javascript: post-logout redirect URI', (u: string) => ({ ...documentFor(u), post_logout_redirect_uris: ['javascript:alert(1)'] }), /post_logout_redirect_uris/],
      ['an array', (u: string) => [documentFor(u)], /JSON object/],
      ['not JSON', () => '<html>', /not valid JSON/],
    ])('refuses a document with %s, storing nothing', async (_label, body, reason) => {
      const url = serve(body);
      await refused(documents().resolve(url), reason);
      expect(await context().runtime.clients.find(url)).toBeUndefined();
    });

    // The draft's §5: any other content type is an error response, as a 404 would be.
    it.each([
      ['text/plain', { 'content-type': 'text/plain' }],
      ['text/html', { 'content-type': 'text/html; charset=utf-8' }],
      ['no content type', { 'content-type': '' }],
    ])('refuses a document served as %s, storing nothing', async (_label, headers) => {
      const path = `/clients/typed-${++sequence}.json`;
      const url = `${base}${path}`;
      routes.set(path, (_req, res) => {
        if (!headers['content-type']) res.removeHeader('content-type');
        res.writeHead(200, headers['content-type'] ? headers : {}).end(JSON.stringify(documentFor(url)));
      });
      await refused(documents().resolve(url), /must be served as application\/json/);
      expect(await context().runtime.clients.find(url)).toBeUndefined();
    });

    it('accepts application/json with parameters, and a more specific application/…+json', async () => {
      for (const type of ['application/json; charset=utf-8', 'Application/JSON', 'application/client-metadata+json']) {
        const url = serve(documentFor, { 'content-type': type });
        expect((await documents().resolve(url)).id, type).toBe(url);
      }
    });

    it('gives up on a document whose body starts but never ends (a slow server)', async () => {
      routes.set('/clients/trickle.json', (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"client_id":');
      });
      await refused(documents({ timeoutMs: 300 }).resolve(`${base}/clients/trickle.json`), /did not arrive/);
    });

    it('gives up within the time limit on a host name that does not resolve in time', async () => {
      const resolver = documents({ timeoutMs: 100, resolveHost: () => new Promise(() => {}) });
      await refused(resolver.resolve('https://agent.example/client.json'), /did not arrive within 100 ms/);
      expect(await context().runtime.clients.find('https://agent.example/client.json')).toBeUndefined();
    });

    it('refuses a document that redirects, without following it', async () => {
      const target = serve(documentFor);
      routes.set('/clients/redirect.json', (_req, res) => res.writeHead(302, { location: target }).end());
      await refused(documents().resolve(`${base}/clients/redirect.json`), /redirect/);
      expect(hits.get(new URL(target).pathname) ?? 0).toBe(0);
    });

    it('refuses a huge document, announced or streamed', async () => {
      const announced = serve((u) => ({ ...documentFor(u), padding: 'x'.repeat(10_000) }));
      await refused(documents().resolve(announced), /larger than 5120 bytes/);
      routes.set('/clients/streamed.json', (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"padding":"');
        for (let i = 0; i < 20; i++) res.write('x'.repeat(1024));
        res.end('"}');
      });
      await refused(documents().resolve(`${base}/clients/streamed.json`), /larger than 5120 bytes/);
    });

    it('gives up on a document that does not arrive in time', async () => {
      routes.set('/clients/slow.json', () => {
        /* never answers */
      });
      await refused(documents({ timeoutMs: 200 }).resolve(`${base}/clients/slow.json`), /did not arrive/);
      expect(await context().runtime.clients.find(`${base}/clients/slow.json`)).toBeUndefined();
    });

    it('refuses private addresses and http unless CIMD_ALLOW_PRIVATE, and URLs without a path or with a fragment', async () => {
      const url = serve(documentFor);
      await refused(documents({ allowPrivate: false }).resolve(url), /https/);
      await refused(documents({ allowPrivate: false }).resolve(url.replace('http:', 'https:')), /private, loopback or link-local/);
      await refused(documents({ allowPrivate: false }).resolve('https://[::1]/c.json'), /private/);
      await refused(documents({ allowPrivate: false }).resolve('https://169.254.169.254/latest/meta-data'), /private/);
      await refused(documents().resolve(`${base}/`), /path/);
      await refused(documents().resolve(`${base}/a/../c.json`), /normalized/);
      expect(hits.get(new URL(url).pathname) ?? 0).toBe(0);
    });

    it('honours Cache-Control within bounds, and shares one fetch among concurrent requests', async () => {
      const url = serve(documentFor, { 'cache-control': 'max-age=0' });
      const resolver = documents();
      const clients = await Promise.all(Array.from({ length: 10 }, () => resolver.resolve(url)));
      expect(hits.get(new URL(url).pathname)).toBe(1);
      // max-age=0 is raised to the one-minute minimum: the stored client is used meanwhile.
      expect(clients[0]!.metadataExpiresAt!.getTime()).toBeGreaterThan(Date.now() + 30_000);
      await resolver.resolve(url, clients[0]);
      expect(hits.get(new URL(url).pathname)).toBe(1);
      const long = serve(documentFor, { 'cache-control': 'max-age=999999999' });
      const cached = await resolver.resolve(long);
      expect(cached.metadataExpiresAt!.getTime()).toBeLessThanOrEqual(Date.now() + 86_400_000);
    });

    it('at /authorize: a document on a private address is shown as an error page, never redirected', async () => {
      const { verifier: _v, challenge } = pkcePair();
      const url = serve(documentFor).replace('http:', 'https:');
      const res = await request(context().app)
        .get('/authorize')
        .query({ response_type: 'code', client_id: url, redirect_uri: 'http://127.0.0.1/callback', code_challenge: challenge, code_challenge_method: 'S256' })
        .redirects(0);
      expect(res.status).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.text).toContain('metadata document');
      expect(await context().runtime.clients.find(url)).toBeUndefined();
    });

    it('answers a document that just failed with that failure, without fetching it again until the window has passed', async () => {
      let answer: unknown = [];
      const url = serve(() => answer);
      const resolver = documents({ failureCacheSeconds: 0.3 });
      await refused(resolver.resolve(url), /JSON object/);
      answer = documentFor(url);
      await refused(resolver.resolve(url), /JSON object/);
      expect(hits.get(new URL(url).pathname)).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect((await resolver.resolve(url)).id).toBe(url);
      expect(hits.get(new URL(url).pathname)).toBe(2);
    });

    it('counts each fetch against the requesting IP, across resolvers (instances), and refuses one over the limit with Retry-After', async () => {
      const throttle = new IpRequestThrottle(context().runtime.db, 'client-metadata', 2);
      const first = documents({ throttle });
      const second = documents({ throttle });
      const ip = `198.51.100.${++sequence % 250}`;
      const stored = await first.resolve(serve(documentFor), undefined, ip);
      await refused(second.resolve(serve(() => []), undefined, ip), /JSON object/);
      const over = serve(documentFor);
      const error = await first.resolve(over, undefined, ip).then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(RateLimited);
      expect(error).toMatchObject({ code: 'temporarily_unavailable', status: 429 });
      expect((error as RateLimited).retryAfterSeconds).toBeGreaterThan(0);
      expect(hits.get(new URL(over).pathname) ?? 0).toBe(0);
      expect(await context().runtime.clients.find(over)).toBeUndefined();
      // Another address has its own count, and a stored document still fresh is neither fetched nor counted.
      expect((await first.resolve(over, undefined, `${ip}1`)).id).toBe(over);
      expect(await first.resolve(stored.id, stored, ip)).toBe(stored);
    });

    it('runs only so many fetches at once: another document is refused with 503 while the same one is joined', async () => {
      const held: http.ServerResponse[] = [];
      const slow = (name: string) => {
        const path = `/clients/held-${name}-${++sequence}.json`;
        routes.set(path, (_req, res) => void held.push(res));
        return `${base}${path}`;
      };
      const resolver = documents({ maxConcurrentFetches: 2 });
      const [a, b, c] = [slow('a'), slow('b'), slow('c')];
      const fetches = [resolver.resolve(a), resolver.resolve(b), resolver.resolve(a)];
      await expect.poll(() => held.length).toBe(2);
      const error = await resolver.resolve(c).then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(ServiceBusy);
      expect(error).toMatchObject({ code: 'temporarily_unavailable', status: 503, retryAfterSeconds: 1 });
      expect(hits.get(new URL(c).pathname) ?? 0).toBe(0);
      for (const res of held) {
        const url = `${base}${res.req.url}`;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(documentFor(url)));
      }
      expect((await Promise.all(fetches)).map((client) => client.id)).toEqual([a, b, a]);
      // The slots are free again.
      routes.set(new URL(c).pathname, (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(documentFor(c))));
      expect((await resolver.resolve(c)).id).toBe(c);
    });

    it('at /authorize: fetches over CIMD_FETCH_RATE_LIMIT get a 429 page with Retry-After, never a redirect', async () => {
      const { challenge } = pkcePair();
      const authorize = (clientId: string) =>
        request(context().app)
          .get('/authorize')
          .query({ response_type: 'code', client_id: clientId, redirect_uri: 'http://127.0.0.1/callback', code_challenge: challenge, code_challenge_method: 'S256' })
          .redirects(0);
      // The suite allows two fetches per IP; the private-address test above used one. Private addresses are refused after
      // the count, so each new URL here is one fetch.
      const statuses: number[] = [];
      let last: request.Response | undefined;
      for (let i = 0; i < 3; i++) {
        last = await authorize(serve(documentFor).replace('http:', 'https:'));
        statuses.push(last.status);
      }
      expect(statuses).toContain(429);
      expect(statuses.slice(statuses.indexOf(429))).toEqual(Array(statuses.length - statuses.indexOf(429)).fill(429));
      expect(last!.headers.location).toBeUndefined();
      expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
      expect(last!.text).toContain('too many client metadata document fetches');
      expect(last!.headers['content-type']).toMatch(/^text\/html/);
    });

    it('advertises client_id_metadata_document_supported', async () => {
      const res = await request(context().app).get('/.well-known/oauth-authorization-server');
      expect(res.body.client_id_metadata_document_supported).toBe(true);
    });
  },
  { CIMD_ALLOW_PRIVATE: 'false', CIMD_FETCH_RATE_LIMIT: '2' },
);

/**
 * Requests a well-behaved client never sends, written byte for byte on a socket: each gets a clear refusal in the
 * protocol's shape (or the answer its well-formed twin gets), never a 500, a stack trace, a hang or another request's
 * response. The server is the one `fieldgate serve` runs (startServer), on PGlite: nothing here depends on the database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import net from 'node:net';
import { startServer, type RunningServer } from '../../src/server.js';
import { createTestRuntime, type TestRuntime } from '../support/runtime.js';
import { dpopKey, dpopProof } from '../support/dpop.js';
import { createTestUser, issueTestToken } from '../support/tokens.js';
import { eq } from 'drizzle-orm';
import { grants, orders, products } from '../../src/db/schema.js';
import { buildSeller } from '../support/factories.js';

/** Within the range of ports this suite was given. */
const PORT = 47150;
const ISSUER = `http://127.0.0.1:${PORT}`;
const HOST = `Host: 127.0.0.1:${PORT}\r\n`;

interface RawResponse {
  status: number;
  head: string;
  body: string;
}

/** Writes `bytes` on a new connection and collects everything until the server closes it (or `waitMs` passes). */
function exchange(bytes: string, waitMs = 5_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(PORT, '127.0.0.1', () => socket.write(Buffer.from(bytes, 'latin1')));
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(data);
    }, waitMs);
    socket.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(data);
    });
    socket.on('error', reject);
  });
}

/** The responses on one connection, in order (Content-Length framed, as every answer of ours is). */
function responses(data: string): RawResponse[] {
  const found: RawResponse[] = [];
  let rest = data;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    const head = rest.slice(0, end);
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    found.push({ status: Number(head.slice(9, 12)), head, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return found;
}

async function one(bytes: string): Promise<RawResponse> {
  const [response, ...others] = responses(await exchange(bytes));
  expect(others).toEqual([]);
  expect(response, 'a response').toBeDefined();
  return response!;
}

/** A Google-style error body with this reason. */
function expectRestError(response: RawResponse, status: number, reason: string): void {
  expect(response.status).toBe(status);
  expect(response.head).toMatch(/\r\ncontent-type: application\/json/i);
  const body = JSON.parse(response.body) as { error: { code: number; details: { reason: string }[] } };
  expect(body.error.code).toBe(status);
  expect(body.error.details[0]!.reason).toBe(reason);
}

/**
 * Sends `head` and `body` at once, without waiting for 100 Continue (RFC 9110 §10.1.1 allows it); resolves with what
 * was received and the socket's error, if any.
 */
function eager(head: string, body: Buffer): Promise<{ received: string; error: string | undefined }> {
  return new Promise((resolve) => {
    const socket = net.connect(PORT, '127.0.0.1');
    let received = '';
    let error: string | undefined;
    let written = false;
    const settle = () => {
      const final = received.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '');
      const end = final.indexOf('\r\n\r\n');
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(final)?.[1] ?? -1);
      const complete = end >= 0 && final.length >= end + 4 + length;
      if ((complete && written) || error) {
        socket.destroy();
        resolve({ received, error });
      }
    };
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      settle();
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code;
      settle();
    });
    socket.on('close', () => resolve({ received, error: error ?? 'closed' }));
    socket.write(head);
    socket.write(body, (e?: NodeJS.ErrnoException | null) => {
      if (e) error = e.code ?? 'write error';
      written = true;
      settle();
    });
  });
}

describe('hostile HTTP on the wire', () => {
  let context: TestRuntime;
  let server: RunningServer;

  beforeAll(async () => {
    context = await createTestRuntime('pglite', { PORT: String(PORT), HOST: '127.0.0.1', ISSUER, REGISTRATION: 'open' });
    server = await startServer(context.runtime);
  });

  afterAll(async () => {
    await server?.close();
    await context?.testDatabase.drop();
  });

  describe('framing (RFC 9112 §6, §11.2): ambiguous messages are refused and the connection closed', () => {
    it.each([
      ['Content-Length with Transfer-Encoding', 'Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
      ['two Content-Length fields', 'Content-Length: 4\r\nContent-Length: 5\r\n\r\nabcde'],
      ['chunked not last in Transfer-Encoding', 'Transfer-Encoding: chunked, identity\r\n\r\n4\r\nabcd\r\n0\r\n\r\n'],
      ['an obs-fold line', 'Transfer-Encoding:\r\n chunked\r\nContent-Length: 3\r\n\r\nabc'],
      ['a bare LF', 'Content-Length: 3\nX: y\r\n\r\nabc'],
    ])('%s: 400, and the request smuggled behind it is never answered', async (_, rest) => {
      const data = await exchange(`POST /token HTTP/1.1\r\n${HOST}${rest}GET /healthz HTTP/1.1\r\n${HOST}\r\n`);
      const [refusal, ...others] = responses(data);
      expectRestError(refusal!, 400, 'INVALID_HTTP');
      expect(refusal!.head).toMatch(/\r\nConnection: close/i);
      expect(others).toEqual([]);
    });

    it('answers pipelined requests in order, each with its own response', async () => {
      const data = await exchange(
        `GET /healthz HTTP/1.1\r\n${HOST}\r\nGET /.well-known/oauth-authorization-server HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`,
      );
      const [health, metadata, ...others] = responses(data);
      expect(JSON.parse(health!.body)).toEqual({ status: 'ok' });
      expect((JSON.parse(metadata!.body) as { issuer: string }).issuer).toBe(ISSUER);
      expect(others).toEqual([]);
    });
  });

  describe('the request target and Host (RFC 9112 §3.2): ISSUER alone names the server', () => {
    it('reads an absolute-form target as its origin form: GraphQL answers it as it answers /graphql', async () => {
      const target = '/graphql?query=%7B__typename%7D';
      const originForm = await one(`GET ${target} HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`);
      const absoluteForm = await one(`GET http://evil.example${target} HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`);
      expect(originForm.status).toBe(401);
      expect(absoluteForm.status).toBe(originForm.status);
      expect(absoluteForm.body).toBe(originForm.body);
    });

    it('reads an absolute-form POST /graphql as its origin form, not as a 500 with a stack trace', async () => {
      const response = await one(`POST http://evil.example/graphql HTTP/1.1\r\n${HOST}Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`);
      expect(response.status).toBe(400);
      expect(response.body).not.toMatch(/\bat /);
      expect(JSON.parse(response.body)).toHaveProperty('errors');
    });

    it("checks a DPoP proof's htu against the origin form of an absolute-form target (RFC 9449 §4.3)", async () => {
      const { runtime } = context;
      const key = await dpopKey();
      const userId = await createTestUser(runtime);
      const client = await runtime.clients.create({ name: 'dpop app', redirectUris: ['https://app.example/cb'], isPublic: true, scope: 'products:read' });
      const grantId = crypto.randomUUID();
      await runtime.db.insert(grants).values({ id: grantId, clientId: client.client_id, userId, scope: 'products:read' });
      const { token } = await runtime.accessTokens.issue({ userId, clientId: client.client_id, scope: 'products:read', grantId, jkt: key.jkt });
      const proof = await dpopProof(key, { htm: 'GET', htu: `${ISSUER}/products`, accessToken: token });
      const response = await one(`GET http://evil.example/products HTTP/1.1\r\n${HOST}Authorization: DPoP ${token}\r\nDPoP: ${proof}\r\nConnection: close\r\n\r\n`);
      expect(response.status).toBe(200);
    });

    it('hands out only ISSUER URLs to an absolute-form request for another host', async () => {
      const response = await one(`GET http://evil.example/.well-known/oauth-authorization-server HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`);
      expect(response.status).toBe(200);
      expect(response.body).not.toContain('evil.example');
      expect((JSON.parse(response.body) as { issuer: string }).issuer).toBe(ISSUER);
    });

    it.each(['a b', '[', '[::1', '%zz', 'a:99999', 'a:b:c', '@', 'a@b', 'a/b', 'a?b', 'a#b', 'é.example'])(
      'refuses Host: %s with 400 on every face (GraphQL built its URL from it)',
      async (host) => {
        for (const target of ['/graphql?query=%7B__typename%7D', '/products', '/token']) {
          const response = await one(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
          expectRestError(response, 400, 'INVALID_HOST');
        }
      },
    );

    it('refuses Host: xn--a (no valid punycode) where the runtime cannot build a URL from it, and answers it as any host where it can', async () => {
      // Node 20 and 22 refuse the label; Node 24's URL parser takes it.
      const buildable = URL.canParse('http://xn--a/');
      for (const target of ['/graphql?query=%7B__typename%7D', '/products', '/token']) {
        const response = await one(`GET ${target} HTTP/1.1\r\nHost: xn--a\r\nConnection: close\r\n\r\n`);
        if (buildable) expect([target, response.status]).not.toEqual([target, 400]);
        else expectRestError(response, 400, 'INVALID_HOST');
        expect(response.status).toBeLessThan(500);
      }
    });

    it.each(['localhost', '127.0.0.1:47150', '[::1]:8080', 'fieldgate.example', 'fieldgate.example.:443', ''])('accepts Host: %s', async (host) => {
      const response = await one(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      expect(response.status).toBe(200);
    });

    it('refuses an absolute-form target whose authority is no host', async () => {
      const response = await one(`GET http://a%20b/healthz HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`);
      expectRestError(response, 400, 'INVALID_HOST');
    });

    it('refuses a request with two Host fields', async () => {
      const response = await one(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`);
      expectRestError(response, 400, 'INVALID_HOST');
    });

    it('refuses an HTTP/1.1 request without Host in the Google error shape, not with an empty body', async () => {
      const response = await one(`GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n`);
      expectRestError(response, 400, 'INVALID_HOST');
    });

    it('still answers an HTTP/1.0 request without Host', async () => {
      const response = await one(`GET /healthz HTTP/1.0\r\n\r\n`);
      expect(response.status).toBe(200);
    });
  });

  describe('methods', () => {
    it('answers a server-wide OPTIONS * (RFC 9110 §9.3.7) with the methods the server serves, not 404', async () => {
      const response = await one(`OPTIONS * HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`);
      expect(response.status).toBe(204);
      expect(response.head).toMatch(/\r\nallow: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS\r\n/i);
    });

    it('refuses the asterisk form for any method but OPTIONS (RFC 9112 §3.2.4)', async () => {
      const response = await one(`GET * HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`);
      expectRestError(response, 400, 'INVALID_REQUEST_TARGET');
    });

    it('answers CONNECT (no proxy here) with a refusal instead of dropping the connection', async () => {
      const response = await one(`CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n`);
      expectRestError(response, 405, 'METHOD_NOT_ALLOWED');
    });

    it('answers a body promised after 100 Continue and never sent with 408, not by closing without a word', async () => {
      const { headersTimeout, requestTimeout } = server.server;
      // The documented 10 s and 30 s, shortened for the test (Node checks only a request timeout above the headers one).
      server.server.headersTimeout = 1_000;
      server.server.requestTimeout = 2_000;
      try {
        const data = await exchange(`POST /token HTTP/1.1\r\n${HOST}Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n`, 10_000);
        expect(data.startsWith('HTTP/1.1 100 Continue\r\n\r\n')).toBe(true);
        const [timeout, ...others] = responses(data.slice('HTTP/1.1 100 Continue\r\n\r\n'.length));
        expectRestError(timeout!, 408, 'REQUEST_TIMEOUT');
        expect(others).toEqual([]);
      } finally {
        server.server.headersTimeout = headersTimeout;
        server.server.requestTimeout = requestTimeout;
      }
    }, 15_000);

    describe('Expect: 100-continue (RFC 9110 §10.1.1): the body is asked for only when it will be read', () => {
      const HUGE = 10 * 1024 * 1024;
      const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';

      /** What a client that waits for 100 Continue before sending its body gets, when it never has to send it. */
      async function answeredWithoutBody(head: string): Promise<RawResponse> {
        const data = await exchange(`${head}Expect: 100-continue\r\n\r\n`);
        expect(data.startsWith(CONTINUE), 'no 100 Continue for a body that will not be read').toBe(false);
        const [response, ...others] = responses(data);
        expect(others).toEqual([]);
        expect(response, 'an answer without the body, and the connection closed').toBeDefined();
        expect(response!.head).toMatch(/\r\nconnection: close\r\n/i);
        return response!;
      }

      it.each([
        ['/token', 'application/x-www-form-urlencoded'],
        ['/revoke', 'application/x-www-form-urlencoded'],
        ['/register', 'application/json'],
      ])('refuses a body declared over the limit at POST %s with 413 before asking for it', async (path, type) => {
        const response = await answeredWithoutBody(`POST ${path} HTTP/1.1\r\n${HOST}Content-Type: ${type}\r\nContent-Length: ${HUGE}\r\n`);
        expect(response.status).toBe(413);
        expect(JSON.parse(response.body)).toMatchObject({ error: 'invalid_request' });
      });

      it('refuses a REST body declared over the limit with 413 in the Google shape before asking for it', async () => {
        const { token } = await issueTestToken(context.runtime);
        const response = await answeredWithoutBody(
          `PATCH /orders/1?update_mask=memo HTTP/1.1\r\n${HOST}Authorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${HUGE}\r\n`,
        );
        expectRestError(response, 413, 'BODY_TOO_LARGE');
      });

      it('asks for a compressed REST body declared over the limit: it is held to the limit once inflated', async () => {
        const { token } = await issueTestToken(context.runtime);
        const data = await exchange(
          `PATCH /orders/1?update_mask=memo HTTP/1.1\r\n${HOST}Authorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 70000\r\nExpect: 100-continue\r\n\r\n`,
          2_000,
        );
        expect(data).toBe(CONTINUE);
      });

      it('refuses a GraphQL body declared over the limit with 413 and a GraphQL error before asking for it', async () => {
        const response = await answeredWithoutBody(`POST /graphql HTTP/1.1\r\n${HOST}Content-Type: application/json\r\nContent-Length: ${HUGE}\r\n`);
        expect(response.status).toBe(413);
        expect(JSON.parse(response.body)).toMatchObject({ errors: [{ extensions: { code: 'INVALID_ARGUMENT', reason: 'BODY_TOO_LARGE' } }] });
      });

      it('answers a request refused for its credentials without asking for the body', async () => {
        const response = await answeredWithoutBody(`PATCH /orders/1?update_mask=memo HTTP/1.1\r\n${HOST}Content-Type: application/json\r\nContent-Length: 20\r\n`);
        expect(response.status).toBe(401);
        expect(response.head).toMatch(/\r\nwww-authenticate: Bearer/i);
      });

      it('answers a client that sends its body without waiting, refused before the body is read, without a reset (RFC 9112 §9.6)', async () => {
        const body = Buffer.alloc(4 * 1024 * 1024, 'a');
        const outcomes: string[] = [];
        for (let i = 0; i < 10; i++) {
          const { received, error } = await eager(
            `POST /orders HTTP/1.1\r\n${HOST}Authorization: Bearer bad\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n`,
            body,
          );
          outcomes.push(`${received.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '').split('\r\n')[0] || '(nothing)'} ${error ?? 'no error'}`);
        }
        expect(outcomes).toEqual(Array(10).fill('HTTP/1.1 401 Unauthorized no error'));
      });

      it('keeps the connection of a request without content that still sent Expect (no body to wait for)', async () => {
        const data = await exchange(`GET /healthz HTTP/1.1\r\n${HOST}Expect: 100-continue\r\n\r\nGET /healthz HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`);
        const answered = responses(data).filter((response) => response.status !== 100);
        expect(answered.map((response) => response.status)).toEqual([200, 200]);
        expect(answered[0]!.head).not.toMatch(/\r\nconnection: close\r\n/i);
      });

      it('takes in, without a reset, a body sent after the answer that closed the connection (lingering close)', async () => {
        const body = Buffer.alloc(1024 * 1024, 'a');
        const outcome = await new Promise<{ status: string; writeError: string | undefined }>((resolve) => {
          const socket = net.connect(PORT, '127.0.0.1', () =>
            socket.write(`POST /orders HTTP/1.1\r\n${HOST}Authorization: Bearer bad\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n`),
          );
          let received = '';
          let status = '';
          socket.on('data', (chunk: Buffer) => {
            received += chunk.toString('latin1');
            const [response] = responses(received);
            if (!status && response && received.length >= received.indexOf('\r\n\r\n') + 4 + response.body.length) {
              status = received.split('\r\n')[0]!;
              // A client that stopped waiting just as the answer came: its body is on its way.
              socket.write(body, (error?: NodeJS.ErrnoException | null) => {
                socket.destroy();
                resolve({ status, writeError: error?.code });
              });
            }
          });
          socket.on('error', (error: NodeJS.ErrnoException) => resolve({ status, writeError: error.code }));
        });
        expect(outcome).toEqual({ status: 'HTTP/1.1 401 Unauthorized', writeError: undefined });
      });

      it('answers a request pipelined behind one whose body came without waiting and was refused unread, or does not run it', async () => {
        const { authorization } = await issueTestToken(context.runtime);
        const [product] = await context.runtime.db.insert(products).values({ name: 'Pipelined', priceCents: 100, sellerId: (await buildSeller(context.runtime)).id }).returning();
        const order = JSON.stringify({ items: [{ productId: product!.id, quantity: 1 }], memo: 'pipelined behind a refusal' });
        const data = await exchange(
          `POST /orders HTTP/1.1\r\n${HOST}Authorization: Bearer bad\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}` +
            `POST /orders HTTP/1.1\r\n${HOST}Authorization: ${authorization}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(order)}\r\n\r\n${order}`,
        );
        const answered = responses(data).filter((response) => response.status !== 100);
        expect(answered[0]!.status).toBe(401);
        const created = await context.runtime.db.select().from(orders).where(eq(orders.memo, 'pipelined behind a refusal'));
        // Answered and run, or neither: never an order the client was not told of.
        expect(created.length).toBe(answered.length - 1);
      });

      it('asks for a body it will read, and answers it on a connection kept open', async () => {
        const body = 'grant_type=client_credentials';
        const data = await new Promise<string>((resolve, reject) => {
          const socket = net.connect(PORT, '127.0.0.1', () =>
            socket.write(`POST /token HTTP/1.1\r\n${HOST}Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`),
          );
          let received = '';
          socket.on('data', (chunk: Buffer) => {
            received += chunk.toString('latin1');
            if (received === CONTINUE) socket.write(body);
            else if (responses(received.slice(CONTINUE.length)).length === 1) {
              socket.destroy();
              resolve(received);
            }
          });
          socket.on('error', reject);
        });
        expect(data.startsWith(CONTINUE)).toBe(true);
        const [response] = responses(data.slice(CONTINUE.length));
        // No client credentials (RFC 6749 §5.2: 400 when none were attempted): the body was read and judged.
        expect(response!.status, response!.body).toBe(400);
        expect(JSON.parse(response!.body)).toMatchObject({ error: 'invalid_client' });
        expect(response!.head).not.toMatch(/\r\nconnection: close\r\n/i);
      });
    });

    it('answers an expectation it cannot meet with 417 in the Google error shape', async () => {
      const response = await one(`POST /token HTTP/1.1\r\n${HOST}Expect: 200-ok\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc`);
      expectRestError(response, 417, 'EXPECTATION_FAILED');
    });
  });
});

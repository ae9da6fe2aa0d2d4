/**
 * The server Fieldgate is served by creates each request and response with the prototypes Express gives them, so
 * Express's own `Object.setPrototypeOf` changes nothing; everything Express offers on them works as on a plain server.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import express from 'express';
import { bornWith, createAppServer } from '../../src/http/app-server.js';

const servers: http.Server[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function listening(server: http.Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function expressApp(): express.Express {
  const app = express();
  app.set('query parser', 'simple');
  app.use(express.urlencoded({ extended: false }));
  app.get('/echo', (req, res) => {
    res.status(201).set('X-Path', req.path).json({ query: req.query, ip: req.ip, secure: req.secure, hostname: req.hostname });
  });
  app.post('/form', (req, res) => {
    res.json({ body: req.body as unknown });
  });
  app.get('/away', (_req, res) => res.redirect(303, '/echo?from=away'));
  app.get('/fails', () => {
    throw new Error('handler failed');
  });
  app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(500).type('text').send(`caught: ${error.message}`);
  });
  return app;
}

/** The prototypes a request and its response have when the server emits them, before Express sees them. */
function prototypesAtBirth(server: http.Server): { request?: object | null; response?: object | null } {
  const seen: { request?: object | null; response?: object | null } = {};
  server.prependListener('request', (req, res) => {
    seen.request = Object.getPrototypeOf(req) as object | null;
    seen.response = Object.getPrototypeOf(res) as object | null;
  });
  return seen;
}

describe('the app server', () => {
  it("creates requests and responses with the app's prototypes, which a plain Node server does not", async () => {
    const app = expressApp();
    const ours = createAppServer(app);
    const plain = http.createServer(app);
    const [oursSeen, plainSeen] = [prototypesAtBirth(ours), prototypesAtBirth(plain)];
    await fetch(`${await listening(ours)}/echo`);
    await fetch(`${await listening(plain)}/echo`);

    expect(oursSeen.request).toBe(app.request);
    expect(oursSeen.response).toBe(app.response);
    expect(plainSeen.request).toBe(http.IncomingMessage.prototype);
    expect(plainSeen.response).toBe(http.ServerResponse.prototype);
  });

  it('serves everything Express adds to requests and responses', async () => {
    const base = await listening(createAppServer(expressApp(), { requireHostHeader: false }));

    const echo = await fetch(`${base}/echo?a=1&b=two`);
    expect(echo.status).toBe(201);
    expect(echo.headers.get('x-path')).toBe('/echo');
    expect(echo.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await echo.json()).toEqual({ query: { a: '1', b: 'two' }, ip: '127.0.0.1', secure: false, hostname: '127.0.0.1' });

    const form = await fetch(`${base}/form`, { method: 'POST', body: new URLSearchParams({ grant_type: 'x y' }) });
    expect(await form.json()).toEqual({ body: { grant_type: 'x y' } });

    const away = await fetch(`${base}/away`, { redirect: 'manual' });
    expect(away.status).toBe(303);
    expect(away.headers.get('location')).toBe('/echo?from=away');

    const head = await fetch(`${base}/echo`, { method: 'HEAD' });
    expect(head.status).toBe(201);
    expect(await head.text()).toBe('');

    const failed = await fetch(`${base}/fails`);
    expect(failed.status).toBe(500);
    expect(await failed.text()).toBe('caught: handler failed');
  });

  it('keeps Node options such as the request timeout checks', () => {
    const server = createAppServer(expressApp(), { requireHostHeader: false, connectionsCheckingInterval: 1234 });
    servers.push(server);
    expect((server as unknown as { requireHostHeader: boolean }).requireHostHeader).toBe(false);
    expect((server as unknown as { connectionsCheckingInterval: number }).connectionsCheckingInterval).toBe(1234);
  });
});

describe('objects born with a prototype', () => {
  it('are built by the base constructor, with the given prototype from the start', () => {
    class Base {
      constructor(readonly first?: unknown) {}
    }
    function Legacy(this: { first?: unknown }, first?: unknown) {
      this.first = first;
    }
    const prototype = Object.create(Legacy.prototype as object) as object;
    const Born = bornWith(Legacy, prototype) as unknown as new (first: unknown) => { first: unknown };
    const made = new Born('value');
    expect(Object.getPrototypeOf(made)).toBe(prototype);
    expect(made.first).toBe('value');
    // A class cannot be called on an object it did not create: such a base is left as it is.
    expect(bornWith(Base, Object.create(Base.prototype) as object)).toBe(Base);
  });

  it('refuses a prototype that does not inherit from the base', () => {
    expect(() => bornWith(http.IncomingMessage, {})).toThrow(TypeError);
  });
});

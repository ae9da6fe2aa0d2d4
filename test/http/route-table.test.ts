import { describe, expect, it } from 'vitest';
import express, { type ErrorRequestHandler, type Request, type RequestHandler, type Response } from 'express';
import request from 'supertest';
import { RouteTable } from '../../src/http/route-table.js';

const answer =
  (name: string): RequestHandler =>
  (req, res) => {
    res.json({ name, params: req.params, route: (req.route as { path: string }).path });
  };

const onError: ErrorRequestHandler = (error: Error & { status?: number }, _req, res, _next) => {
  res.status(error.status ?? 500).json({ error: error.message });
};

function app(table: RouteTable): express.Express {
  const a = express();
  a.use(table.handler);
  a.use((req, res) => {
    res.status(404).json({ fellThrough: req.path });
  });
  return a;
}

describe('route table', () => {
  const table = new RouteTable(onError)
    .add('GET', '/products', [answer('list')])
    .add('GET', '/products/:id', [answer('item')])
    .add('POST', '/products', [answer('create')])
    .add('ALL', '/products', [answer('other method')]);

  it('matches as a case-sensitive Express router does: exact case, one trailing slash, GET answering HEAD', async () => {
    expect((await request(app(table)).get('/products')).body).toMatchObject({ name: 'list', route: '/products' });
    expect((await request(app(table)).get('/products/')).body.name).toBe('list');
    expect((await request(app(table)).get('/products/7/')).body).toEqual({ name: 'item', params: { id: '7' }, route: '/products/:id' });
    expect((await request(app(table)).get('/PRODUCTS/')).body).toEqual({ fellThrough: '/PRODUCTS/' });
    expect((await request(app(table)).get('/Products/7')).body).toEqual({ fellThrough: '/Products/7' });
    expect((await request(app(table)).delete('/PRODUCTS')).body).toEqual({ fellThrough: '/PRODUCTS' });
    expect((await request(app(table)).post('/products')).body.name).toBe('create');
    expect((await request(app(table)).delete('/products')).body.name).toBe('other method');
    const head = await request(app(table)).head('/products/7');
    expect(head.status).toBe(200);
    expect(head.headers['content-type']).toMatch(/json/);
  });

  it('decodes parameters, and answers one that does not decode with a 400 error', async () => {
    expect((await request(app(table)).get('/products/a%20b')).body.params).toEqual({ id: 'a b' });
    const bad = await request(app(table)).get('/products/%E0%A4%A');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/Failed to decode param/);
  });

  it('hands on what it does not serve', async () => {
    for (const path of ['/products/7/reviews', '/products//', '/other', '/products/7//']) {
      expect((await request(app(table)).get(path)).body, path).toEqual({ fellThrough: path });
    }
    expect((await request(app(table)).delete('/products/7')).status).toBe(404);
  });

  it('runs the handlers in turn, then the next matching route, and sends thrown, passed and rejected errors to its error handler', async () => {
    const steps = new RouteTable(onError)
      .add('GET', '/a', [(_req, res, next) => ((res.locals.seen = ['first']), next()), (_req, res, next) => (res.locals.seen.push('second'), next())])
      .add('GET', '/a', [(_req, res) => res.json(res.locals.seen)])
      .add('GET', '/thrown', [() => {
        throw new Error('thrown');
      }])
      .add('GET', '/passed', [(_req, _res, next) => next(new Error('passed'))])
      .add('GET', '/rejected', [async () => {
        throw new Error('rejected');
      }])
      .add('GET', '/skip', [(_req, _res, next) => next('route'), answer('skipped')])
      .add('GET', '/skip', [answer('after skip')]);
    expect((await request(app(steps)).get('/a')).body).toEqual(['first', 'second']);
    for (const name of ['thrown', 'passed', 'rejected']) {
      const res = await request(app(steps)).get(`/${name}`);
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: name });
    }
    expect((await request(app(steps)).get('/skip')).body.name).toBe('after skip');
  });
});

describe('route table ignoring case', () => {
  const table = new RouteTable(onError, { caseSensitive: false })
    .add('GET', '/authorize', [answer('page')])
    .add('POST', '/authorize/login', [answer('login')])
    .add('ALL', '/authorize/login', [answer('other method')])
    .add('GET', '/items/:Id', [answer('item')]);

  it('matches ASCII letters in any case, as an Express router does by default, and keeps parameters as sent', async () => {
    expect((await request(app(table)).get('/AUTHORIZE')).body).toMatchObject({ name: 'page', route: '/authorize' });
    expect((await request(app(table)).get('/Authorize/')).body.name).toBe('page');
    expect((await request(app(table)).post('/authorize/LOGIN')).body.name).toBe('login');
    expect((await request(app(table)).get('/Authorize/Login')).body.name).toBe('other method');
    expect((await request(app(table)).get('/ITEMS/AbC')).body).toEqual({ name: 'item', params: { Id: 'AbC' }, route: '/items/:Id' });
  });

  it('folds no other letter onto an ASCII one, as Express does not', async () => {
    const express = expressRouterAnswering('/authorize');
    for (const path of ['/authorıze', '/authorizé', '/authoriz%C3%89', '/authorize_', '/authoriz']) {
      expect((await request(app(table)).get(path)).body.fellThrough, path).toBeDefined();
      expect((await request(express).get(path)).status, path).toBe(404);
    }
    expect((await request(express).get('/AUTHORIZE')).status).toBe(200);
    // A Kelvin sign lowercases to "k"; clients percent-encode it, so the table is called directly with it raw.
    const reached: string[] = [];
    const kelvin = new RouteTable(onError, { caseSensitive: false }).add('GET', '/token', [() => reached.push('token')]);
    kelvin.handler({ method: 'GET', path: '/TO\u212AEN' } as Request, {} as Response, (error?: unknown) => reached.push(`next ${String(error)}`));
    kelvin.handler({ method: 'GET', path: '/ToKeN' } as Request, {} as Response, (error?: unknown) => reached.push(`next ${String(error)}`));
    expect(reached).toEqual(['next undefined', 'token']);
    expect(/^\/token$/i.test('/to\u212Aen')).toBe(false);
  });
});

function expressRouterAnswering(path: string): express.Express {
  const router = express.Router();
  router.get(path, (_req, res) => res.send('matched'));
  const server = express();
  server.use(router);
  return server;
}

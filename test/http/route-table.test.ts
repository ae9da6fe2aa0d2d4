import { describe, expect, it } from 'vitest';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
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

import { describe, expect, it } from 'vitest';
import express from 'express';
import request from 'supertest';
import { SegmentDispatcher } from '../../src/http/dispatch.js';

function router(name: string): express.Router {
  const r = express.Router();
  r.get(['/token', '/products', '/products/:id', '/.well-known/jwks.json'], (req, res) => {
    res.json({ router: name, path: req.path, params: req.params });
  });
  return r;
}

function app(): express.Express {
  const a = express();
  const dispatcher = new SegmentDispatcher().mount(['/token', '/.well-known'], router('oauth')).mount(['/products'], router('rest'));
  a.use(dispatcher.handler);
  a.use((req, res) => {
    res.status(404).json({ fellThrough: req.path });
  });
  return a;
}

describe('dispatch by first path segment', () => {
  it.each([
    ['/token', 'oauth'],
    ['/products', 'rest'],
    ['/products/7', 'rest'],
    ['/.well-known/jwks.json', 'oauth'],
  ])('hands %s to the %s router', async (path, name) => {
    const res = await request(app()).get(path);
    expect(res.status).toBe(200);
    expect(res.body.router).toBe(name);
  });

  it('matches as Express does: any case, with or without a trailing slash', async () => {
    expect((await request(app()).get('/TOKEN')).body.router).toBe('oauth');
    expect((await request(app()).get('/products/')).body.router).toBe('rest');
    expect((await request(app()).get('/Products/7/')).body).toMatchObject({ router: 'rest', params: { id: '7' } });
  });

  it('lets a request no router claims, or its router does not answer, go on', async () => {
    expect((await request(app()).get('/nothing/here')).body).toEqual({ fellThrough: '/nothing/here' });
    expect((await request(app()).get('/')).body).toEqual({ fellThrough: '/' });
    expect((await request(app()).get('/token/extra')).body).toEqual({ fellThrough: '/token/extra' });
  });

  it('refuses to mount anything but one segment, or one segment twice', () => {
    expect(() => new SegmentDispatcher().mount(['/a/b'], router('x'))).toThrow(/single path segment/);
    expect(() => new SegmentDispatcher().mount(['token'], router('x'))).toThrow(/single path segment/);
    expect(() => new SegmentDispatcher().mount(['/token'], router('x')).mount(['/Token'], router('y'))).toThrow(/mounted twice/);
  });
});

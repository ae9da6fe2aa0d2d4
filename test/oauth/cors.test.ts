/**
 * CORS: on the token, revocation, introspection, metadata and JWKS
 * endpoints for the configured origins; never on /authorize or the sign-in pages.
 */
import { expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase } from '../support/runtime.js';

const ALLOWED = 'https://spa.example';

describeEachDatabase(
  'CORS',
  (context) => {
    it.each(['/token', '/revoke', '/introspect'])('answers the preflight of POST %s for an allowed origin', async (path) => {
      const res = await request(context().app)
        .options(path)
        .set('Origin', ALLOWED)
        .set('Access-Control-Request-Method', 'POST')
        .set('Access-Control-Request-Headers', 'authorization, content-type');
      expect(res.status).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
      expect(res.headers['access-control-allow-methods']).toContain('POST');
      expect(res.headers['access-control-allow-headers']?.toLowerCase()).toContain('authorization');
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    });

    it.each(['/.well-known/oauth-authorization-server', '/.well-known/jwks.json'])('allows GET %s from an allowed origin', async (path) => {
      const res = await request(context().app).get(path).set('Origin', ALLOWED);
      expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
    });

    it('puts CORS headers on token errors too, so the browser client can read them', async () => {
      const res = await request(context().app).post('/token').set('Origin', ALLOWED).type('form').send({});
      expect(res.status).toBe(400);
      expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
    });

    it('does not allow other origins', async () => {
      const res = await request(context().app).post('/token').set('Origin', 'https://evil.example').type('form').send({});
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    });

    it.each(['GET', 'PUT', 'DELETE'])('answers the preflight of %s on a client configuration endpoint (RFC 7592 §2)', async (method) => {
      const res = await request(context().app)
        .options('/register/some-client')
        .set('Origin', ALLOWED)
        .set('Access-Control-Request-Method', method)
        .set('Access-Control-Request-Headers', 'authorization, content-type');
      expect(res.status).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
      expect(res.headers['access-control-allow-methods']?.split(',')).toContain(method);
    });

    it('lets the page read Retry-After on a 429, so a browser client knows when to try again', async () => {
      const register = () =>
        request(context().app).post('/register').set('Origin', ALLOWED).send({ redirect_uris: [`${ALLOWED}/callback`], token_endpoint_auth_method: 'none' });
      await register();
      const throttled = await register();
      expect(throttled.status).toBe(429);
      expect(throttled.headers['retry-after']).toMatch(/^\d+$/);
      expect(throttled.headers['access-control-allow-origin']).toBe(ALLOWED);
      expect(throttled.headers['access-control-expose-headers']?.toLowerCase().split(',')).toContain('retry-after');
    });

    it.each(['/authorize?client_id=x', '/authorize/login', '/authorize/consent'])('never sends CORS headers on %s', async (path) => {
      const get = await request(context().app).get(path).set('Origin', ALLOWED);
      expect(get.headers['access-control-allow-origin']).toBeUndefined();
      const preflight = await request(context().app).options(path).set('Origin', ALLOWED).set('Access-Control-Request-Method', 'POST');
      expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    });
  },
  { CORS_ORIGINS: `${ALLOWED},https://other.example`, REGISTRATION: 'open', REGISTRATION_RATE_LIMIT: '1' },
);

/**
 * While the database is out of reach, every face says "try again shortly" in its own protocol — OAuth
 * `temporarily_unavailable`, REST `UNAVAILABLE`, GraphQL `UNAVAILABLE` — with 503 and `Retry-After`, never a 500 that
 * reads as a defect, and never an answer that blames the client (its credentials or its token). The database really
 * goes away: the embedded one is closed under the running app.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { GraphQLError } from 'graphql';
import { sql } from 'drizzle-orm';
import { createTestRuntime, type TestRuntime } from '../support/runtime.js';
import { basic, buildClient, buildUser, obtainTokens, tokenRequest, type TestClient } from '../support/oauth.js';
import { buildProduct } from '../support/factories.js';
import { maskError } from '../../src/graphql/errors.js';
import { DATABASE_RETRY_AFTER_SECONDS } from '../../src/db/errors.js';

describe('a request while the database is out of reach', () => {
  let context: TestRuntime;
  let service: TestClient;
  let app: TestClient;
  let tokens: { access_token: string; refresh_token: string };
  let productId: number;

  beforeAll(async () => {
    context = await createTestRuntime('pglite');
    const { runtime } = context;
    service = await buildClient(runtime, { redirectUris: [], grantTypes: ['client_credentials'] });
    app = await buildClient(runtime);
    tokens = await obtainTokens(context.app, runtime, app, await buildUser(runtime), { scope: 'products:read offline_access' });
    productId = (await buildProduct(runtime, { name: 'Lamp' })).id;
    await runtime.database.close();
  });
  afterAll(async () => {
    await context?.close().catch(() => {});
  });

  const retryLater = (res: request.Response) => {
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe(String(DATABASE_RETRY_AFTER_SECONDS));
  };

  it('answers /token with 503 temporarily_unavailable, not invalid_client or server_error', async () => {
    for (const res of [
      await tokenRequest(context.app, { grant_type: 'client_credentials', scope: 'products:read' }, service),
      await tokenRequest(context.app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, app),
      await request(context.app).post('/revoke').set('Authorization', basic(app.id, app.secret!)).type('form').send({ token: tokens.refresh_token }),
    ]) {
      retryLater(res);
      expect(res.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
      expect(res.headers['cache-control']).toBe('no-store');
    }
  });

  it('answers a REST read with 503 UNAVAILABLE, not a 401 for a good token', async () => {
    const res = await request(context.app).get(`/products/${productId}?fields=id,name`).set('Authorization', `Bearer ${tokens.access_token}`);
    retryLater(res);
    expect(res.body.error).toMatchObject({ code: 503, status: 'UNAVAILABLE', details: [{ reason: 'DATABASE_UNAVAILABLE' }] });
  });

  it('answers POST /graphql with 503 and extensions.code UNAVAILABLE', async () => {
    const res = await request(context.app)
      .post('/graphql')
      .set('Authorization', `Bearer ${tokens.access_token}`)
      .send({ query: `{ product(id: ${productId}) { id name } }` });
    retryLater(res);
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'UNAVAILABLE', http: { status: 503 } });
    expect(JSON.stringify(res.body)).not.toMatch(/PGlite|select|stack/i);
  });

  it('answers /authorize with a 503 page, not Something went wrong', async () => {
    const res = await request(context.app).get('/authorize?response_type=code&client_id=never-looked-up&state=s');
    retryLater(res);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('Try again in a moment');
  });

  it('masks a resolver that met the closed database as UNAVAILABLE at its path, not INTERNAL_SERVER_ERROR', async () => {
    const driverError = await context.runtime.db.execute(sql`select 1`).then(() => undefined, (error: unknown) => error as Error);
    expect(driverError).toBeInstanceOf(Error);
    const masked = maskError(new GraphQLError('x', { path: ['product'], originalError: driverError }), () => {});
    expect(masked.extensions).toEqual({ code: 'UNAVAILABLE' });
    expect(masked.path).toEqual(['product']);
    expect(masked.message).not.toMatch(/PGlite/);
  });
});

/**
 * A grant that no longer exists counts as revoked: deleting its client or its user (by the CLI's
 * store calls or directly in SQL) ends every token of it — 401 on the resource side, inactive at
 * /introspect, invalid_grant at /token — and nothing answers 5xx, including an order written for
 * an account deleted after its token was checked.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { eq, sql } from 'drizzle-orm';
import { grants, users } from '../../src/db/schema.js';
import { ConsentStore } from '../../src/oauth/stores/consents.js';
import { REVOCATION_CACHE_MS } from '../../src/tokens/revocation.js';
import { buildProduct } from '../support/factories.js';
import { describeEachDatabase } from '../support/runtime.js';
import { basic, buildClient, buildUser, obtainTokens, tokenRequest, type TestClient } from '../support/oauth.js';

const SCOPE = 'products:read orders:read orders:write';

describeEachDatabase('deleted clients, users and grants', (context) => {
  let productId: number;

  beforeAll(async () => {
    productId = (await buildProduct(context().runtime)).id;
  });

  const app = () => request(context().app);
  const order = (accessToken: string) =>
    app().post('/orders').set('Authorization', `Bearer ${accessToken}`).send({ items: [{ productId, quantity: 1 }] });
  const graphql = (accessToken: string) =>
    app().post('/graphql').set('Authorization', `Bearer ${accessToken}`).send({ query: '{ __typename }' });
  const introspect = (client: TestClient, token: string) =>
    app().post('/introspect').set('Authorization', basic(client.id, client.secret!)).type('form').send({ token });

  async function expectRefused(accessToken: string) {
    for (const res of [await graphql(accessToken), await app().get('/products').set('Authorization', `Bearer ${accessToken}`), await order(accessToken)]) {
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer .*error="invalid_token"/);
    }
  }

  /** Another instance learns of a deletion within the revocation cache window; wait it out without a timed assertion. */
  const pastCacheWindow = () => new Promise((resolve) => setTimeout(resolve, REVOCATION_CACHE_MS + 100));

  async function liveTokens() {
    const client = await buildClient(context().runtime);
    const user = await buildUser(context().runtime);
    const tokens = await obtainTokens(context().app, context().runtime, client, user, { scope: SCOPE });
    expect((await order(tokens.access_token)).status).toBe(201);
    return { client, user, tokens };
  }

  it('after the client is deleted, its tokens stop working', async () => {
    const { client, tokens } = await liveTokens();
    expect(await context().runtime.clients.delete(client.id)).toBe(true);
    await pastCacheWindow();
    await expectRefused(tokens.access_token);
    const refresh = await tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client);
    // invalid_grant while an instance still caches the client, invalid_client once it has forgotten it.
    expect([400, 401]).toContain(refresh.status);
    expect(['invalid_grant', 'invalid_client']).toContain(refresh.body.error);
  });

  it('after the user row is deleted in SQL, tokens are revoked everywhere and nothing answers 5xx', async () => {
    const { client, user, tokens } = await liveTokens();
    await context().runtime.db.delete(users).where(eq(users.id, user.id));
    // Straight away (this instance may still hold the token as valid in its cache): a clean 401, not a foreign-key 500.
    const immediate = await order(tokens.access_token);
    expect(immediate.status).toBe(401);
    expect(immediate.body.error.status).toBe('UNAUTHENTICATED');
    await pastCacheWindow();
    await expectRefused(tokens.access_token);
    expect((await introspect(client, tokens.access_token)).body).toEqual({ active: false });
    expect((await introspect(client, tokens.refresh_token)).body).toEqual({ active: false });
    const refresh = await tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client);
    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe('invalid_grant');
  });

  it('after the grant row alone is deleted, its access tokens are revoked', async () => {
    const { client, tokens } = await liveTokens();
    await context().runtime.db.execute(sql`delete from ${grants} where ${grants.id} = ${tokens.grantId}`);
    await pastCacheWindow();
    await expectRefused(tokens.access_token);
    expect((await introspect(client, tokens.access_token)).body).toEqual({ active: false });
  });

  it('recording a consent for a deleted account is refused cleanly (the consent form then asks to sign in)', async () => {
    const { runtime } = context();
    const client = await buildClient(runtime);
    const user = await buildUser(runtime);
    await runtime.db.delete(users).where(eq(users.id, user.id));
    expect(await new ConsentStore(runtime.db).grant(user.id, client.id, ['products:read'])).toBe(false);
  });
});

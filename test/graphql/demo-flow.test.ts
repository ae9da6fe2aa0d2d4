import { beforeAll, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { describeEachDatabase } from '../support/runtime.js';
import { obtainTokens, type TestClient } from '../support/oauth.js';
import { postGraphQL } from '../support/graphql.js';
import { DEMO_CLIENT_ID, DEMO_PASSWORD, DEMO_PRODUCT_COUNT, DEMO_USERNAME, seedDemo } from '../../src/demo/seed.js';
import { users } from '../../src/db/schema.js';

/** The "done when": a client holding a token from the demo flow uses the whole API. */
describeEachDatabase('GraphQL with a token from the demo flow', (context) => {
  let token: string;

  beforeAll(async () => {
    const { runtime, app } = context();
    const seeded = await seedDemo(runtime);
    const [demo] = await runtime.db.select({ id: users.id }).from(users).where(eq(users.username, DEMO_USERNAME));
    const client: TestClient = {
      id: DEMO_CLIENT_ID,
      secret: seeded.client.client_secret,
      redirectUri: seeded.client.redirect_uri,
      redirectUris: [seeded.client.redirect_uri],
      name: 'Fieldgate Demo App',
      isPublic: false,
    };
    const tokens = await obtainTokens(app, runtime, client, { id: demo!.id, username: DEMO_USERNAME, password: DEMO_PASSWORD }, {
      scope: 'products:read orders:read orders:write',
    });
    token = tokens.access_token;
  });

  it('lists products with any selection, reads and creates orders, and updates them', async () => {
    const { app } = context();
    const catalogue = await postGraphQL(app, token, '{ products(limit: 200) { id name seller { name } reviews { rating } } }');
    expect(catalogue.status).toBe(200);
    const products = (catalogue.body.data as { products: { id: number }[] }).products;
    expect(products).toHaveLength(DEMO_PRODUCT_COUNT);

    const mine = await postGraphQL(app, token, '{ orders { status memo items { quantity product { name } } } }');
    expect((mine.body.data as { orders: { status: string }[] }).orders.map((order) => order.status)).toEqual(['PENDING', 'PAID']);

    const created = await postGraphQL(app, token, 'mutation ($id: Int!) { createOrder(input: { items: [{ productId: $id, quantity: 1 }], memo: "demo" }) { id etag } }', {
      id: products[0]!.id,
    });
    const { id, etag } = (created.body.data as { createOrder: { id: number; etag: string } }).createOrder;
    const updated = await postGraphQL(app, token, 'mutation ($id: Int!, $etag: String) { updateOrder(id: $id, input: { status: PAID }, etag: $etag) { status memo } }', {
      id,
      etag,
    });
    expect(updated.body).toEqual({ data: { updateOrder: { status: 'PAID', memo: 'demo' } } });
  });
});

import { expect, it } from 'vitest';
import request from 'supertest';
import { count, isNull, sql } from 'drizzle-orm';
import { describeEachDatabase } from '../support/runtime.js';
import { seedDemo, DEMO_CLIENT_ID, DEMO_PASSWORD, DEMO_USERNAME } from '../../src/demo/seed.js';
import { products, reviews, sellers, shippingPolicies } from '../../src/db/schema.js';

describeEachDatabase('demo seed', (context) => {
  it('seeds at least 25 products with sellers, shipping policies and reviews', async () => {
    const { runtime } = context();
    const result = await seedDemo(runtime);
    expect(result.productsCreated).toBeGreaterThanOrEqual(25);
    const { db } = runtime;
    const [[p], [s], [sp], [r]] = await Promise.all([
      db.select({ n: count() }).from(products),
      db.select({ n: count() }).from(sellers),
      db.select({ n: count() }).from(shippingPolicies),
      db.select({ n: count() }).from(reviews),
    ]);
    expect(p!.n).toBeGreaterThanOrEqual(25);
    expect(s!.n).toBeGreaterThan(1);
    expect(sp!.n).toBeGreaterThan(1);
    expect(r!.n).toBeGreaterThan(p!.n);
  });

  it('includes products with a null description and products with no reviews', async () => {
    const { db } = context().runtime;
    const [withoutDescription] = await db.select({ n: count() }).from(products).where(isNull(products.description));
    expect(withoutDescription!.n).toBeGreaterThan(0);
    const withoutReviews = await db
      .select({ id: products.id })
      .from(products)
      .where(sql`not exists (select 1 from ${reviews} where ${reviews.productId} = ${products.id})`);
    expect(withoutReviews.length).toBeGreaterThan(0);
  });

  it('creates the demo user, who can sign in with demo / demo', async () => {
    const { users } = context().runtime;
    expect(await users.authenticate(DEMO_USERNAME, DEMO_PASSWORD)).toMatchObject({ username: 'demo' });
    expect(await users.authenticate(DEMO_USERNAME, 'wrong')).toBeUndefined();
  });

  it('creates a confidential demo client redirecting to this service\'s /demo/callback', async () => {
    const { runtime } = context();
    const client = await runtime.clients.find(DEMO_CLIENT_ID);
    expect(client).toMatchObject({ isPublic: false, redirectUris: [`${runtime.config.issuer}/demo/callback`] });
  });

  it('keeps one demo client secret across seeds, so a second instance does not rotate it under the first', async () => {
    const { runtime } = context();
    const first = await seedDemo(runtime);
    const again = await Promise.all(Array.from({ length: 5 }, () => seedDemo(runtime)));
    expect(again.every((seeded) => seeded.productsCreated === 0)).toBe(true);
    expect(new Set(again.map((seeded) => seeded.client.client_secret))).toEqual(new Set([first.client.client_secret]));
    const client = (await runtime.clients.find(DEMO_CLIENT_ID))!;
    expect(runtime.clients.verifySecret(client, first.client.client_secret)).toBe(true);
    expect(client.secretHash).not.toContain(first.client.client_secret);
  });
});

describeEachDatabase(
  'demo callback page',
  (context) => {
    it('shows the code, the state and a curl command for /token, all escaped', async () => {
      const res = await request(context().app).get('/demo/callback').query({ code: 'abc123', state: '<script>x</script>' });
      expect(res.status).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.text).toContain('abc123');
      expect(res.text).toContain('&lt;script&gt;x&lt;/script&gt;');
      expect(res.text).not.toContain('<script>x</script>');
      expect(res.text).toContain('curl -s -u');
      expect(res.text).toContain(`${context().config.issuer}/token`);
      expect(res.text).toContain('grant_type=authorization_code');
    });

    it('shows an error returned instead of a code', async () => {
      const res = await request(context().app).get('/demo/callback').query({ error: 'access_denied', state: 's1' });
      expect(res.status).toBe(200);
      expect(res.text).toContain('access_denied');
      expect(res.text).not.toContain('curl');
    });
  },
  { DEMO: 'true' },
);

describeEachDatabase('demo pages outside demo mode', (context) => {
  it('does not serve /demo/callback', async () => {
    const res = await request(context().app).get('/demo/callback').query({ code: 'x' });
    expect(res.status).toBe(404);
  });
});

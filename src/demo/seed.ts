/** Demo data; idempotent: each part is added only when missing. */
import { count, eq } from 'drizzle-orm';
import type { Runtime } from '../runtime.js';
import { clients as clientRows, orderItems, orders, products, reviews, sellers, shippingPolicies, users } from '../db/schema.js';
import { instanceSecret } from '../db/instance-secrets.js';
import type { Db } from '../db/database.js';
import { hashPassword } from '../crypto/passwords.js';

export const DEMO_USERNAME = 'demo';
export const DEMO_PASSWORD = 'demo';
export const DEMO_CLIENT_ID = 'demo-client';
export const DEMO_PRODUCT_COUNT = 30;

const SELLERS = [
  { name: 'Northwind Outfitters', rating: 4.7 },
  { name: 'Blue Harbor Goods', rating: 4.2 },
  { name: 'Cedar & Pine', rating: 3.9 },
  { name: 'Tidewater Trading', rating: null },
  { name: 'Summit Supply Co.', rating: 4.9 },
];

const SHIPPING_POLICIES = [
  { name: 'Standard', minDays: 3, maxDays: 7, feeCents: 499, regions: ['US', 'CA'] },
  { name: 'Express', minDays: 1, maxDays: 2, feeCents: 1499, regions: ['US'] },
  { name: 'International', minDays: 7, maxDays: 21, feeCents: 2499, regions: ['EU', 'UK', 'JP', 'AU'] },
];

const ADJECTIVES = ['Trail', 'Harbor', 'Alpine', 'Canyon', 'Meadow', 'Coastal'];
const NOUNS = ['Backpack', 'Water Bottle', 'Rain Jacket', 'Headlamp', 'Camp Mug', 'Wool Socks', 'Hammock', 'Compass'];
const REVIEW_AUTHORS = ['ana', 'bo', 'chen', 'dmitri', 'emeka', 'fatima', 'gus'];
const REVIEW_BODIES = ['Exactly as described.', 'Solid build, fair price.', 'Arrived late but works well.', null, 'Would buy again!'];

export interface DemoSeedResult {
  productsCreated: number;
  userCreated: boolean;
  client: { client_id: string; client_secret: string; redirect_uri: string };
}

export function demoRedirectUri(issuer: string): string {
  return `${issuer}/demo/callback`;
}

async function seedCatalogue(db: Db): Promise<number> {
  const [existing] = await db.select({ n: count() }).from(products);
  if ((existing?.n ?? 0) > 0) return 0;
  return db.transaction(async (tx) => {
    const sellerRows = await tx.insert(sellers).values(SELLERS).returning({ id: sellers.id });
    const policyRows = await tx.insert(shippingPolicies).values(SHIPPING_POLICIES).returning({ id: shippingPolicies.id });
    const productValues = Array.from({ length: DEMO_PRODUCT_COUNT }, (_, i) => ({
      name: `${ADJECTIVES[i % ADJECTIVES.length]} ${NOUNS[i % NOUNS.length]}`,
      // Every fifth product has no description, to show null as distinct from omitted.
      description: i % 5 === 4 ? null : `A dependable ${NOUNS[i % NOUNS.length]!.toLowerCase()} for everyday adventures (model ${i + 1}).`,
      priceCents: 995 + ((i * 731) % 12000),
      currency: 'USD',
      sellerId: sellerRows[i % sellerRows.length]!.id,
      // Every seventh product has no shipping policy.
      shippingPolicyId: i % 7 === 6 ? null : policyRows[i % policyRows.length]!.id,
    }));
    const productRows = await tx.insert(products).values(productValues).returning({ id: products.id });
    const reviewValues = productRows.flatMap((product, i) =>
      // Every fourth product has no reviews.
      Array.from({ length: i % 4 === 3 ? 0 : 1 + (i % 3) }, (_, j) => ({
        productId: product.id,
        author: REVIEW_AUTHORS[(i + j) % REVIEW_AUTHORS.length]!,
        rating: 1 + ((i * 3 + j) % 5),
        body: REVIEW_BODIES[(i + j) % REVIEW_BODIES.length] ?? null,
      })),
    );
    await tx.insert(reviews).values(reviewValues);
    return productRows.length;
  });
}

async function seedDemoOrders(db: Db, userId: number): Promise<void> {
  const catalogue = await db.select({ id: products.id, priceCents: products.priceCents }).from(products).orderBy(products.id).limit(3);
  if (catalogue.length < 3) return;
  const [first, second, third] = catalogue as [(typeof catalogue)[0], (typeof catalogue)[0], (typeof catalogue)[0]];
  await db.transaction(async (tx) => {
    const [paid] = await tx
      .insert(orders)
      .values({ userId, status: 'paid', memo: 'Leave at the back door', totalCents: first.priceCents * 2 + second.priceCents })
      .returning({ id: orders.id });
    await tx.insert(orderItems).values([
      { orderId: paid!.id, productId: first.id, quantity: 2, unitPriceCents: first.priceCents },
      { orderId: paid!.id, productId: second.id, quantity: 1, unitPriceCents: second.priceCents },
    ]);
    const [pending] = await tx.insert(orders).values({ userId, totalCents: third.priceCents }).returning({ id: orders.id });
    await tx.insert(orderItems).values({ orderId: pending!.id, productId: third.id, quantity: 1, unitPriceCents: third.priceCents });
  });
}

/**
 * The demo client's secret is kept in `instance_secrets` (insert-if-absent), so restarts and every instance on one
 * database print and accept the same secret instead of rotating it under each other.
 */
/**
 * The demo user's password hash, for a first start to compute before the embedded database is loaded: scrypt holds
 * 32 MiB while it runs, which would otherwise add to the embedded database's memory at the start's peak.
 */
export function demoPasswordHash(): Promise<string> {
  return hashPassword(DEMO_PASSWORD);
}

export async function seedDemo(runtime: Runtime, options: { passwordHash?: string } = {}): Promise<DemoSeedResult> {
  const { db, users: userStore, clients } = runtime;
  const productsCreated = await seedCatalogue(db);

  let userCreated = false;
  const [existingUser] = await db.select({ id: users.id }).from(users).where(eq(users.username, DEMO_USERNAME));
  if (!existingUser) {
    const user = await userStore.create(DEMO_USERNAME, DEMO_PASSWORD, { allowShortPassword: true, ...options });
    await seedDemoOrders(db, user.id);
    userCreated = true;
  }

  const redirectUri = demoRedirectUri(runtime.config.issuer);
  const secret = await instanceSecret(db, 'demo-client-secret');
  let client = await clients.find(DEMO_CLIENT_ID);
  if (!client) {
    await clients.create({ id: DEMO_CLIENT_ID, name: 'Fieldgate Demo App', redirectUris: [redirectUri] }).catch(async (error) => {
      // Another instance created it first.
      if (!(await clients.find(DEMO_CLIENT_ID))) throw error;
    });
    client = (await clients.find(DEMO_CLIENT_ID))!;
  }
  if (!client.redirectUris.includes(redirectUri)) {
    await clients.setRedirectUris(DEMO_CLIENT_ID, [...client.redirectUris, redirectUri]);
  }
  if (!clients.verifySecret(client, secret)) {
    await db.update(clientRows).set({ secretHash: clients.hashSecret(secret) }).where(eq(clientRows.id, DEMO_CLIENT_ID));
  }
  return { productsCreated, userCreated, client: { client_id: DEMO_CLIENT_ID, client_secret: secret, redirect_uri: redirectUri } };
}

export async function isEmptyDatabase(db: Db): Promise<boolean> {
  const [[p], [u]] = await Promise.all([db.select({ n: count() }).from(products), db.select({ n: count() }).from(users)]);
  return (p?.n ?? 0) === 0 && (u?.n ?? 0) === 0;
}

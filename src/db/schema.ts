/**
 * The one Drizzle schema (pg-core) that both drivers — PGlite and postgres.js — run.
 * Money is integer cents; every timestamp is `timestamptz`.
 * Secrets (client secrets, codes, refresh tokens, passwords) are stored only as hashes.
 */
import {
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgEnum,
  pgTable,
  primaryKey,
  real,
  serial,
  text,
  timestamp,
} from 'drizzle-orm/pg-core';
import { sql } from 'drizzle-orm';

const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow();
const updatedAt = () => timestamp('updated_at', { withTimezone: true }).notNull().defaultNow();

// ---------------------------------------------------------------- OAuth

export const clients = pgTable('clients', {
  id: text('id').primaryKey(),
  /** HMAC-SHA-256 of the generated secret; null for public clients. */
  secretHash: text('secret_hash'),
  name: text('name').notNull(),
  redirectUris: text('redirect_uris').array().notNull(),
  /** Scopes the client may request; also its default when a request names none. */
  scopes: text('scopes').array().notNull(),
  grantTypes: text('grant_types').array().notNull(),
  isPublic: boolean('is_public').notNull().default(false),
  createdAt: createdAt(),
  /** The secret before the last rotation, still accepted until `previousSecretExpiresAt`. */
  previousSecretHash: text('previous_secret_hash'),
  previousSecretExpiresAt: timestamp('previous_secret_expires_at', { withTimezone: true }),
});

export const users = pgTable('users', {
  id: serial('id').primaryKey(),
  username: text('username').notNull().unique(),
  /** scrypt, in the self-describing form produced by src/oauth/passwords.ts */
  passwordHash: text('password_hash').notNull(),
  createdAt: createdAt(),
});

/**
 * One user's authorization of one client: the family every code, refresh token and
 * access token of one consent belongs to. Revoking the grant revokes them all. A
 * client_credentials token has a grant of its own with no user, so deleting the client
 * (which cascades here) ends it like any other.
 */
export const grants = pgTable(
  'grants',
  {
    id: text('id').primaryKey(),
    clientId: text('client_id').notNull().references(() => clients.id, { onDelete: 'cascade' }),
    /** Null for a client_credentials grant: the client acts for itself. */
    userId: integer('user_id').references(() => users.id, { onDelete: 'cascade' }),
    scope: text('scope').notNull(),
    createdAt: createdAt(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [index('grants_client_user_idx').on(t.clientId, t.userId)],
);

export const authorizationCodes = pgTable(
  'authorization_codes',
  {
    /** SHA-256 of the code; the code itself is never stored. */
    codeHash: text('code_hash').primaryKey(),
    grantId: text('grant_id').notNull().references(() => grants.id, { onDelete: 'cascade' }),
    clientId: text('client_id').notNull().references(() => clients.id, { onDelete: 'cascade' }),
    userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    /** The redirect_uri sent to /authorize, or null when the request relied on the only registered one. */
    redirectUri: text('redirect_uri'),
    scope: text('scope').notNull(),
    codeChallenge: text('code_challenge'),
    codeChallengeMethod: text('code_challenge_method'),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    consumedAt: timestamp('consumed_at', { withTimezone: true }),
    createdAt: createdAt(),
  },
  (t) => [index('authorization_codes_grant_idx').on(t.grantId)],
);

export const refreshTokens = pgTable(
  'refresh_tokens',
  {
    /** SHA-256 of the token. */
    tokenHash: text('token_hash').primaryKey(),
    /** The rotation family: every refresh token descended from one code shares it. */
    grantId: text('grant_id').notNull().references(() => grants.id, { onDelete: 'cascade' }),
    clientId: text('client_id').notNull().references(() => clients.id, { onDelete: 'cascade' }),
    userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    scope: text('scope').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    /** Set when the token is rotated away (retired). */
    consumedAt: timestamp('consumed_at', { withTimezone: true }),
    createdAt: createdAt(),
  },
  (t) => [index('refresh_tokens_grant_idx').on(t.grantId)],
);

export const deviceCodeStatus = ['pending', 'approved', 'denied', 'consumed'] as const;

/**
 * Device authorization requests (RFC 8628): `pending` until the user approves or denies the
 * user code at /device, then `consumed` by the one token request that redeems it.
 */
export const deviceCodes = pgTable(
  'device_codes',
  {
    /** SHA-256 of the device code. */
    deviceCodeHash: text('device_code_hash').primaryKey(),
    /** SHA-256 of the normalized user code (8 letters, no dash). */
    userCodeHash: text('user_code_hash').notNull().unique(),
    clientId: text('client_id').notNull().references(() => clients.id, { onDelete: 'cascade' }),
    scope: text('scope').notNull(),
    status: text('status', { enum: deviceCodeStatus }).notNull().default('pending'),
    /** The user who approved or denied it. */
    userId: integer('user_id').references(() => users.id, { onDelete: 'cascade' }),
    /** The polling interval the client must keep; each too-fast poll adds 5 s (§3.5 slow_down). */
    intervalSeconds: integer('interval_seconds').notNull(),
    lastPolledAt: timestamp('last_polled_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    check('device_codes_status', sql`${t.status} in ('pending', 'approved', 'denied', 'consumed')`),
    index('device_codes_expires_idx').on(t.expiresAt),
  ],
);

/** Access tokens revoked one by one through /revoke, kept until they would have expired anyway. */
export const revokedAccessTokens = pgTable('revoked_access_tokens', {
  jti: text('jti').primaryKey(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
});

export const signingKeys = pgTable('signing_keys', {
  kid: text('kid').primaryKey(),
  alg: text('alg').notNull(),
  publicJwk: jsonb('public_jwk').notNull(),
  privateJwk: jsonb('private_jwk').notNull(),
  createdAt: createdAt(),
  /** Set when a newer key takes over signing; the key is still published until its tokens expire. */
  retiredAt: timestamp('retired_at', { withTimezone: true }),
});

export const consents = pgTable(
  'consents',
  {
    userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    clientId: text('client_id').notNull().references(() => clients.id, { onDelete: 'cascade' }),
    /** Space-separated scopes the user has approved for this client. */
    scope: text('scope').notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.clientId] })],
);

/**
 * Random keys generated once per deployment and shared by every instance: the HMAC key for
 * client secrets and the key that signs browser-session cookies.
 */
export const instanceSecrets = pgTable('instance_secrets', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
  createdAt: createdAt(),
});

/** Failed-login counters, shared by every instance: one row per account and one per IP. */
export const loginThrottle = pgTable('login_throttle', {
  key: text('key').primaryKey(),
  failures: integer('failures').notNull().default(0),
  windowStartedAt: timestamp('window_started_at', { withTimezone: true }).notNull().defaultNow(),
  lockedUntil: timestamp('locked_until', { withTimezone: true }),
});

// ---------------------------------------------------------------- Commerce

export const sellers = pgTable('sellers', {
  id: serial('id').primaryKey(),
  name: text('name').notNull(),
  rating: real('rating'),
});

export const shippingPolicies = pgTable('shipping_policies', {
  id: serial('id').primaryKey(),
  name: text('name').notNull(),
  minDays: integer('min_days').notNull(),
  maxDays: integer('max_days').notNull(),
  feeCents: integer('fee_cents').notNull(),
  regions: text('regions').array().notNull(),
});

export const products = pgTable(
  'products',
  {
    id: serial('id').primaryKey(),
    name: text('name').notNull(),
    description: text('description'),
    priceCents: integer('price_cents').notNull(),
    currency: text('currency').notNull().default('USD'),
    sellerId: integer('seller_id')
      .notNull()
      .references(() => sellers.id),
    shippingPolicyId: integer('shipping_policy_id').references(() => shippingPolicies.id),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('products_seller_idx').on(t.sellerId),
    check('products_price_nonnegative', sql`${t.priceCents} >= 0`),
  ],
);

export const reviews = pgTable(
  'reviews',
  {
    id: serial('id').primaryKey(),
    productId: integer('product_id')
      .notNull()
      .references(() => products.id, { onDelete: 'cascade' }),
    author: text('author').notNull(),
    rating: integer('rating').notNull(),
    body: text('body'),
    createdAt: createdAt(),
  },
  (t) => [index('reviews_product_idx').on(t.productId)],
);

export const orderStatus = pgEnum('order_status', ['pending', 'paid', 'shipped', 'delivered', 'cancelled']);

export const orders = pgTable(
  'orders',
  {
    id: serial('id').primaryKey(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    status: orderStatus('status').notNull().default('pending'),
    memo: text('memo'),
    totalCents: integer('total_cents').notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('orders_user_idx').on(t.userId)],
);

export const orderItems = pgTable(
  'order_items',
  {
    id: serial('id').primaryKey(),
    orderId: integer('order_id')
      .notNull()
      .references(() => orders.id, { onDelete: 'cascade' }),
    productId: integer('product_id')
      .notNull()
      .references(() => products.id),
    quantity: integer('quantity').notNull(),
    unitPriceCents: integer('unit_price_cents').notNull(),
  },
  (t) => [index('order_items_order_idx').on(t.orderId)],
);

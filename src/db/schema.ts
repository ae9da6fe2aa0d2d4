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
  /** `private_key_jwt` (RFC 7523 §2.2) for a client that signs assertions; null: secret or public. */
  tokenEndpointAuthMethod: text('token_endpoint_auth_method'),
  /** The client's public keys (a JWK Set) for private_key_jwt, when registered by value. */
  jwks: jsonb('jwks'),
  /** Where the client's public keys are published, when registered by reference. */
  jwksUri: text('jwks_uri'),
  /** RFC 9449 §5.2 `dpop_bound_access_tokens`: every token request must carry a DPoP proof. */
  dpopBoundAccessTokens: boolean('dpop_bound_access_tokens').notNull().default(false),
  // OpenID Connect
  /** `public` (the user id) or `pairwise` (per redirect host, see src/oauth/oidc/subject.ts). */
  subjectType: text('subject_type').notNull().default('public'),
  /** Where RP-Initiated Logout may send the browser afterwards (exact match). */
  postLogoutRedirectUris: text('post_logout_redirect_uris').array().notNull().default(sql`'{}'::text[]`),
  backchannelLogoutUri: text('backchannel_logout_uri'),
  /** Back-Channel Logout §2.2: its logout tokens must carry `sid`. */
  backchannelLogoutSessionRequired: boolean('backchannel_logout_session_required').notNull().default(false),
  /** Front-Channel Logout 1.0: loaded in an iframe of our signed-out page. */
  frontchannelLogoutUri: text('frontchannel_logout_uri'),
  /** Front-Channel Logout §2: the iframe URL carries `iss` and `sid`. */
  frontchannelLogoutSessionRequired: boolean('frontchannel_logout_session_required').notNull().default(false),
  /** OIDC Core §5.3.2: `ES256` or `RS256` when /userinfo answers this client with a signed JWT; null: plain JSON. */
  userinfoSignedResponseAlg: text('userinfo_signed_response_alg'),
  /** OIDC Registration §2: `ES256` or `RS256` for its ID Tokens and Logout Tokens; null: ES256 (our default). */
  idTokenSignedResponseAlg: text('id_token_signed_response_alg'),
  policyUri: text('policy_uri'),
  tosUri: text('tos_uri'),
  // -- Self-registration (RFC 7591/7592 and client ID metadata documents)
  /** 'static' (CLI), 'dynamic' (POST /register) or 'metadata_document' (client_id is a URL). */
  registrationType: text('registration_type').$type<'static' | 'dynamic' | 'metadata_document'>().notNull().default('static'),
  /** HMAC of the RFC 7592 registration access token; dynamic clients only. */
  registrationAccessTokenHash: text('registration_access_token_hash'),
  clientUri: text('client_uri'),
  logoUri: text('logo_uri'),
  /** The rest of the registered metadata, echoed back as registered (auth method, contacts, …). */
  registrationMetadata: jsonb('registration_metadata').$type<Record<string, unknown>>(),
  /** Metadata documents: when the fetched document must be fetched again. */
  metadataExpiresAt: timestamp('metadata_expires_at', { withTimezone: true }),
});

/** RFC 7591 §3 initial access tokens (REGISTRATION=token), made with `fieldgate registration-token create`. */
export const registrationTokens = pgTable('registration_tokens', {
  /** SHA-256 of the token. */
  tokenHash: text('token_hash').primaryKey(),
  label: text('label'),
  createdAt: createdAt(),
  expiresAt: timestamp('expires_at', { withTimezone: true }),
});

export const users = pgTable('users', {
  id: serial('id').primaryKey(),
  username: text('username').notNull().unique(),
  /** scrypt, in the self-describing form produced by src/oauth/passwords.ts */
  passwordHash: text('password_hash').notNull(),
  createdAt: createdAt(),
  displayName: text('display_name'),
  email: text('email'),
  emailVerified: boolean('email_verified').notNull().default(false),
  /** Browser sessions signed in before the current epoch are void ("Sign out everywhere"). */
  sessionEpoch: integer('session_epoch').notNull().default(0),
});

/**
 * One user's authorization of one client: the family every refresh token and access
 * token of one consent belongs to. Revoking the grant revokes them all. A code flow's
 * grant is created when its code is redeemed, under an id sealed in the code: the row is
 * the code's single-use mark (oauth/stores/codes.ts). A
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
    /** When the user signed in for the authorization behind this grant (OIDC `auth_time`). */
    authTime: timestamp('auth_time', { withTimezone: true }),
    /** The ID Tokens' `sid`: this client's identifier of the browser session that authorized the grant. */
    sid: text('sid'),
    /** Last code redemption or refresh, for the user's "Connected apps" page. */
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    /** RFC 8707 resources the grant was authorized for (the `aud` of its tokens); empty: the default. */
    resources: text('resources').array().notNull().default(sql`'{}'::text[]`),
  },
  (t) => [index('grants_client_user_idx').on(t.clientId, t.userId)],
);

/**
 * Refresh tokens hang off their grant, whose foreign key cascades a deleted client or user to them. They keep the
 * grant's client and user as plain columns: a foreign key of their own would make every insert lock the client's and
 * the user's row (FOR KEY SHARE), the same two rows for every concurrent flow of one client, which PostgreSQL then
 * shares through multixacts (measured: docs/PERFORMANCE.md). Authorization codes are not stored (stores/codes.ts).
 */
export const refreshTokens = pgTable(
  'refresh_tokens',
  {
    /** SHA-256 of the token. */
    tokenHash: text('token_hash').primaryKey(),
    /** The rotation family: every refresh token descended from one code shares it. */
    grantId: text('grant_id').notNull().references(() => grants.id, { onDelete: 'cascade' }),
    /** The grant's client and user, copied (see above). */
    clientId: text('client_id').notNull(),
    userId: integer('user_id').notNull(),
    scope: text('scope').notNull(),
    /** RFC 9449 §5: thumbprint of the DPoP key a public client's refresh token is bound to. */
    dpopJkt: text('dpop_jkt'),
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
    /** RFC 8707 resources of the device authorization request, given to the grant it is redeemed for; empty: the default. */
    resources: text('resources').array().notNull().default(sql`'{}'::text[]`),
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

/**
 * `jti`s of signed JWTs that may be used only once — DPoP proofs (RFC 9449 §11.1) and client
 * assertions (RFC 7523 §3) — shared by every instance: the first insert wins, a replay conflicts.
 * `signer` is `dpop:<key thumbprint>` or `client:<client_id>`; rows go once `expires_at` passes.
 */
export const usedJtis = pgTable(
  'used_jtis',
  {
    signer: text('signer').notNull(),
    /** SHA-256 of the jti, so a long one costs no more than a short one. */
    jtiHash: text('jti_hash').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.signer, t.jtiHash] }), index('used_jtis_expires_idx').on(t.expiresAt)],
);

/**
 * Browser sessions signed out (RP-initiated logout, Switch account, another account signing in). The cookie is stateless,
 * so a copy of it would outlive the sign-out; every check of a signed-in session refuses a `sid` listed here. `sid` is the
 * cookie's own random id (not the per-client OpenID `sid` of grants); a row goes once the cookie would have expired anyway.
 */
export const endedSessions = pgTable(
  'ended_sessions',
  {
    sid: text('sid').primaryKey(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('ended_sessions_expires_idx').on(t.expiresAt)],
);

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
    // Sortable list fields (order_by), each with id as the keyset tie-breaker (ascending, whatever the field's
    // direction). Prices and a bulk import's timestamps come in large groups of equals, so they are indexed descending
    // too: read backwards, the ascending index would give the ties in the wrong order, and every page would sort its group.
    index('products_name_id_idx').on(t.name, t.id),
    index('products_price_id_idx').on(t.priceCents, t.id),
    index('products_price_desc_id_idx').on(t.priceCents.desc().nullsFirst(), t.id),
    index('products_created_id_idx').on(t.createdAt, t.id),
    index('products_created_desc_id_idx').on(t.createdAt.desc().nullsFirst(), t.id),
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
  (t) => [
    // A product's page of reviews in each order it can be read (nestedOrder: one field either way, ties by id
    // ascending), so the page is read from an index in order: never all of a product's reviews sorted (ratings and a
    // bulk import's timestamps come in large groups of equals), nor the table's ids walked past other products' reviews.
    index('reviews_product_id_idx').on(t.productId, t.id),
    index('reviews_product_rating_id_idx').on(t.productId, t.rating, t.id),
    index('reviews_product_rating_desc_id_idx').on(t.productId, t.rating.desc().nullsFirst(), t.id),
    index('reviews_product_created_id_idx').on(t.productId, t.createdAt, t.id),
    index('reviews_product_created_desc_id_idx').on(t.productId, t.createdAt.desc().nullsFirst(), t.id),
  ],
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
  (t) => [
    index('orders_user_idx').on(t.userId),
    // Sortable list fields (order_by) within one user's orders, id as the keyset tie-breaker.
    index('orders_user_id_idx').on(t.userId, t.id),
    index('orders_user_created_id_idx').on(t.userId, t.createdAt, t.id),
    index('orders_user_total_id_idx').on(t.userId, t.totalCents, t.id),
  ],
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

/**
 * `Idempotency-Key`s of order creation (REST header, GraphQL `idempotencyKey`), per user and
 * client: the first request's fingerprint and the order it created, kept until `expires_at`.
 * The row is written in the order's own transaction, so a key never names a rolled-back order;
 * `response` is the first REST answer (status, headers, body text) for an exact replay.
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    clientId: text('client_id').notNull(),
    key: text('key').notNull(),
    /** SHA-256 (base64url) of the normalized request. */
    requestHash: text('request_hash').notNull(),
    orderId: integer('order_id').references(() => orders.id, { onDelete: 'cascade' }),
    response: jsonb('response').$type<{ status: number; headers: Record<string, string>; fields: string | null; body: string }>(),
    createdAt: createdAt(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.clientId, t.key] }), index('idempotency_keys_expires_idx').on(t.expiresAt)],
);

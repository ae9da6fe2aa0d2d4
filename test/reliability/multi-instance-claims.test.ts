/**
 * README, "Running on PostgreSQL, and as several instances", claim by claim: in-process instances — each a runtime
 * with its own caches and its own app, as separate processes behind a load balancer would be — on one PostgreSQL
 * database and one ISSUER, plus an operator runtime standing for the CLI. The same thing is done on both instances at
 * the same moment wherever the claim is about concurrency. (test/reliability/multi-instance.test.ts runs the flows
 * through real `fieldgate serve` processes.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { randomUUID } from 'node:crypto';
import type { Express } from 'express';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import postgres from 'postgres';
import { count, eq, isNull, sql } from 'drizzle-orm';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { openDatabase } from '../../src/db/database.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { createApp } from '../../src/app.js';
import { grants, orders, refreshTokens, signingKeys } from '../../src/db/schema.js';
import { rotateSigningKey } from '../../src/tokens/signing-keys.js';
import { REVOCATION_CACHE_MS } from '../../src/tokens/revocation.js';
import { JANITOR_LOCK_KEY, sweep, janitorPolicy } from '../../src/oauth/janitor.js';
import { ConsentStore } from '../../src/oauth/stores/consents.js';
import { createPostgresDatabase, TEST_DATABASE_URL } from '../support/databases.js';
import { LogCapture } from '../support/runtime.js';
import {
  authorizeParams,
  authorizePath,
  basic,
  Browser,
  buildClient,
  buildUser,
  formFor,
  obtainTokens,
  pathOf,
  redirectParams,
  tokenRequest,
  type TestClient,
  type TestUser,
} from '../support/oauth.js';
import { issueTestToken } from '../support/tokens.js';
import { buildProduct } from '../support/factories.js';

const ISSUER = 'http://fieldgate.test';
const ENV = { ISSUER, LOG_LEVEL: 'warn', DEMO: 'false', JANITOR_INTERVAL: '0', REGISTRATION: 'open', REGISTRATION_RATE_LIMIT: '6' };

interface Instance {
  runtime: Runtime;
  app: Express;
}

async function instance(url: string, env: Record<string, string> = {}): Promise<Instance> {
  const config = loadConfig({ ...ENV, ...env, DATABASE_URL: url });
  const runtime = await openRuntime(config, createLogger(config.logLevel, new LogCapture()), await openDatabase({ databaseUrl: url, poolSize: 4 }));
  return { runtime, app: createApp(runtime) };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Status of a REST read with this access token at this instance. */
async function restStatus(at: Instance, accessToken: string): Promise<number> {
  return (await request(at.app).get('/products').set('Authorization', `Bearer ${accessToken}`)).status;
}

describe.runIf(TEST_DATABASE_URL)('instances on one PostgreSQL database: what README promises of them', () => {
  let database: { url: string; drop(): Promise<void> };
  let a: Instance;
  let b: Instance;
  /** The CLI's process: a third runtime on the same database. */
  let operator: Instance;
  let client: TestClient;

  beforeAll(async () => {
    database = await createPostgresDatabase();
    // All three start at the same moment on the empty database.
    [a, b, operator] = await Promise.all([instance(database.url), instance(database.url), instance(database.url)]);
    client = await buildClient(operator.runtime);
  });

  afterAll(async () => {
    await Promise.all([a?.runtime.close(), b?.runtime.close(), operator?.runtime.close()]);
    await database?.drop();
  });

  describe('start-up', () => {
    it('instances starting at once migrate once and agree on one signing key per algorithm and one value per deployment secret', async () => {
      const current = await operator.runtime.db.select({ alg: signingKeys.alg }).from(signingKeys).where(isNull(signingKeys.retiredAt));
      expect(current.map((key) => key.alg).sort()).toEqual(['ES256', 'RS256']);
      for (const name of ['sessionSecret', 'refreshTokenSecret', 'pageTokenSecret', 'pairwiseSecret'] as const) {
        expect(new Set([a, b, operator].map((at) => at.runtime[name])).size).toBe(1);
      }
      const kids = await Promise.all([a, b].map(async (at) => (await at.runtime.keys.signingKey()).kid));
      expect(kids[0]).toBe(kids[1]);
    });
  });

  describe('signing keys', () => {
    it('two `keys rotate` at the same moment leave exactly one current key per algorithm', async () => {
      // Both rotations reach their statements while a third session holds the current keys' rows: they then run
      // truly together rather than one after the other by luck.
      const admin = postgres(database.url, { max: 1, onnotice: () => {} });
      try {
        const rotations = await admin.begin(async (tx) => {
          await tx`select kid from signing_keys where retired_at is null for update`;
          const started = [rotateSigningKey(operator.runtime.db, 3600), rotateSigningKey(b.runtime.db, 3600)];
          for (;;) {
            const [waiting] = await tx`select count(*)::int as n from pg_stat_activity
              where datname = current_database() and pid <> pg_backend_pid() and wait_event_type = 'Lock'`;
            if (waiting!.n >= 2) break;
            await sleep(10);
          }
          return started;
        });
        await Promise.all(rotations);
      } finally {
        await admin.end();
      }
      const current = await operator.runtime.db
        .select({ alg: signingKeys.alg, n: count() })
        .from(signingKeys)
        .where(isNull(signingKeys.retiredAt))
        .groupBy(signingKeys.alg)
        .orderBy(signingKeys.alg);
      expect(current).toEqual([
        { alg: 'ES256', n: 1 },
        { alg: 'RS256', n: 1 },
      ]);
    });

    it('accepts at once a token of a key rotated in right after this instance loaded its keys', async () => {
      const { userId, clientId, grantId } = await issueTestToken(operator.runtime);
      // A has just (re)loaded its key set — its periodic reload, say — when the rotation lands.
      await a.runtime.keys.invalidate();
      const { kid } = await rotateSigningKey(operator.runtime.db, 3600);
      // B has met the new key and signs with it; the token reaches A at once.
      await b.runtime.keys.invalidate();
      const fresh = await b.runtime.accessTokens.issue({ userId, clientId, scope: 'products:read', grantId });
      expect(decodeProtectedHeader(fresh.token).kid).toBe(kid);
      await expect(a.runtime.accessTokens.verify(fresh.token)).resolves.toMatchObject({ userId, grantId });
      expect(await restStatus(a, fresh.token)).toBe(200);
    });

    it('publishes in every instance’s JWKS, within a second, a key another instance may already sign with', async () => {
      const before = await request(a.app).get('/.well-known/jwks.json');
      expect(before.status).toBe(200);
      const { kid } = await rotateSigningKey(operator.runtime.db, 3600);
      // B meets the new key (its periodic reload) and signs an ID Token with it; the relying party fetches the JWKS
      // through the load balancer, from A.
      await b.runtime.keys.invalidate();
      expect((await b.runtime.keys.signingKey()).kid).toBe(kid);
      await sleep(1_000);
      const jwks = await request(a.app).get('/.well-known/jwks.json');
      expect((jwks.body as { keys: { kid: string }[] }).keys.map((key) => key.kid)).toContain(kid);
    });

    it('reloads the key set at most once a second for made-up kids, however many arrive at once', async () => {
      const statements: string[] = [];
      const stop = a.runtime.database.onQuery((query) => {
        if (/from "signing_keys"/.test(query)) statements.push(query);
      });
      try {
        await a.runtime.keys.invalidate();
        statements.length = 0;
        const kids = Array.from({ length: 50 }, () => randomUUID());
        const answers = await Promise.all(kids.map((kid) => a.runtime.keys.verificationKey(kid)));
        expect(answers.every((answer) => answer === undefined)).toBe(true);
        expect(statements.length).toBeLessThanOrEqual(1);
      } finally {
        stop();
      }
    });
  });

  describe('revocation', () => {
    let user: TestUser;
    beforeAll(async () => {
      user = await buildUser(operator.runtime);
    });

    it('/revoke at A: refused at A at once, at B once its cached answer is older than the revocation cache window', async () => {
      const tokens = await obtainTokens(a.app, a.runtime, client, user);
      // Both instances have verified the token and cached "not revoked".
      expect([await restStatus(a, tokens.access_token), await restStatus(b, tokens.access_token)]).toEqual([200, 200]);
      const revoked = await request(a.app).post('/revoke').set('Authorization', basic(client.id, client.secret!)).type('form').send({ token: tokens.refresh_token });
      expect(revoked.status).toBe(200);
      expect(await restStatus(a, tokens.access_token)).toBe(401);
      expect((await tokenRequest(b.app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client)).body.error).toBe('invalid_grant');
      await sleep(REVOCATION_CACHE_MS + 50);
      expect(await restStatus(b, tokens.access_token)).toBe(401);
    });

    it('/revoke of an access token at B: refused at B at once, at A once its cached answer is older than the window', async () => {
      const tokens = await obtainTokens(a.app, a.runtime, client, user);
      expect([await restStatus(a, tokens.access_token), await restStatus(b, tokens.access_token)]).toEqual([200, 200]);
      const revoked = await request(b.app).post('/revoke').set('Authorization', basic(client.id, client.secret!)).type('form').send({ token: tokens.access_token });
      expect(revoked.status).toBe(200);
      expect(await restStatus(b, tokens.access_token)).toBe(401);
      await sleep(REVOCATION_CACHE_MS + 50);
      expect(await restStatus(a, tokens.access_token)).toBe(401);
    });

    it('refresh-token reuse detected at B revokes the family at B at once and at A after the window', async () => {
      const tokens = await obtainTokens(a.app, a.runtime, client, user);
      const rotated = await tokenRequest(a.app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client);
      expect(rotated.status).toBe(200);
      expect([await restStatus(a, rotated.body.access_token), await restStatus(b, rotated.body.access_token)]).toEqual([200, 200]);
      const reuse = await tokenRequest(b.app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client);
      expect(reuse.body.error).toBe('invalid_grant');
      expect(await restStatus(b, rotated.body.access_token)).toBe(401);
      await sleep(REVOCATION_CACHE_MS + 50);
      expect(await restStatus(a, rotated.body.access_token)).toBe(401);
      expect((await tokenRequest(a.app, { grant_type: 'refresh_token', refresh_token: rotated.body.refresh_token }, client)).body.error).toBe('invalid_grant');
    });

    it('`consent revoke` (the CLI): refresh tokens stop at once on every instance, access tokens within the window', async () => {
      const tokens = await obtainTokens(a.app, a.runtime, client, user);
      expect([await restStatus(a, tokens.access_token), await restStatus(b, tokens.access_token)]).toEqual([200, 200]);
      const result = await new ConsentStore(operator.runtime.db).revoke(user.username, client.id);
      expect(result?.grantsRevoked).toBeGreaterThan(0);
      expect((await tokenRequest(b.app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client)).body.error).toBe('invalid_grant');
      await sleep(REVOCATION_CACHE_MS + 50);
      expect([await restStatus(a, tokens.access_token), await restStatus(b, tokens.access_token)]).toEqual([401, 401]);
    });

    it('`user passwd` (the CLI): the user’s refresh tokens stop at once on every instance, access tokens within the window', async () => {
      const owner = await buildUser(operator.runtime);
      const tokens = await obtainTokens(a.app, a.runtime, client, owner);
      expect([await restStatus(a, tokens.access_token), await restStatus(b, tokens.access_token)]).toEqual([200, 200]);
      expect(await operator.runtime.users.setPassword(owner.username, 'a new long password')).toBe(owner.id);
      expect((await tokenRequest(b.app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client)).body.error).toBe('invalid_grant');
      await sleep(REVOCATION_CACHE_MS + 50);
      expect([await restStatus(a, tokens.access_token), await restStatus(b, tokens.access_token)]).toEqual([401, 401]);
    });

    it('a user deleted by the CLI: every instance refuses their tokens within the window, pairwise ones included', async () => {
      const doomed = await buildUser(operator.runtime);
      const pairwise = await buildClient(operator.runtime, { redirectUris: ['https://pairwise.example/cb'], oidc: { subjectType: 'pairwise' } });
      const plain = await obtainTokens(a.app, a.runtime, client, doomed);
      const hidden = await obtainTokens(a.app, a.runtime, pairwise, doomed);
      expect(decodeJwt(hidden.access_token).sub).not.toBe(String(doomed.id));
      for (const token of [plain.access_token, hidden.access_token]) {
        expect([await restStatus(a, token), await restStatus(b, token)]).toEqual([200, 200]);
      }
      expect(await operator.runtime.users.delete(doomed.username)).toBeTruthy();
      await sleep(REVOCATION_CACHE_MS + 50);
      for (const token of [plain.access_token, hidden.access_token]) {
        expect([await restStatus(a, token), await restStatus(b, token)]).toEqual([401, 401]);
      }
    });
  });

  describe('refresh tokens', () => {
    it('with REFRESH_TOKEN_REUSE_GRACE, 20 uses of one refresh token over two instances at once all get the same successor', async () => {
      const [graceA, graceB] = await Promise.all([instance(database.url, { REFRESH_TOKEN_REUSE_GRACE: '30' }), instance(database.url, { REFRESH_TOKEN_REUSE_GRACE: '30' })]);
      try {
        const user = await buildUser(operator.runtime);
        const tokens = await obtainTokens(graceA.app, graceA.runtime, client, user);
        const replies = await Promise.all(
          Array.from({ length: 20 }, (_, i) => tokenRequest((i % 2 ? graceA : graceB).app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client)),
        );
        expect(replies.map((reply) => reply.status)).toEqual(Array<number>(20).fill(200));
        // The family keeps one live branch, which still rotates.
        const successors = new Set(replies.map((reply) => reply.body.refresh_token as string));
        expect(successors.size).toBe(1);
        const [successor] = successors;
        expect((await tokenRequest(graceB.app, { grant_type: 'refresh_token', refresh_token: successor }, client)).status).toBe(200);
      } finally {
        await Promise.all([graceA.runtime.close(), graceB.runtime.close()]);
      }
    });
  });

  describe('browser sessions', () => {
    it('“Sign out everywhere” at A ends at B a session signed in at B', async () => {
      const user = await buildUser(operator.runtime);
      const atB = new Browser(b.app);
      expect(redirectParams(await atB.authorize(authorizeParams(client), user)).get('code')).toBeTruthy();
      const cookies = atB.agent.jar.getCookies({ domain: '127.0.0.1', path: '/', secure: false, script: false }).toValueString();
      expect(redirectParams(await atB.open(authorizePath(authorizeParams(client, { prompt: 'none' })))).get('code')).toBeTruthy();
      // The same browser's next request goes to A, which shows its account page, then to B again.
      const account = await request(a.app).get('/account').set('Cookie', cookies);
      expect(account.status).toBe(200);
      const form = formFor(account.text, '/account/sign-out-everywhere');
      const ended = await request(a.app).post(pathOf(form.action)).set('Cookie', cookies).type('form').send(form.fields);
      expect(ended.status).toBe(303);
      const silent = await atB.open(authorizePath(authorizeParams(client, { prompt: 'none' })));
      expect(redirectParams(silent).get('error')).toBe('login_required');
    });
  });

  describe('janitor', () => {
    it('sweeps started on both instances at the same moment neither fails, at least one runs, and the next round leaves nothing due', async () => {
      const user = await buildUser(operator.runtime);
      const issued = await Promise.all(Array.from({ length: 30 }, () => obtainTokens(operator.app, operator.runtime, client, user)));
      const ofIssued = (column: typeof grants.id | typeof refreshTokens.grantId) => sql`${column} in ${issued.map((tokens) => tokens.grantId)}`;
      // Refresh tokens long expired and grants long created, past any retention and code lifetime.
      await operator.runtime.db.update(refreshTokens).set({ expiresAt: sql`now() - interval '10 days'` }).where(ofIssued(refreshTokens.grantId));
      await operator.runtime.db.update(grants).set({ createdAt: sql`now() - interval '10 days'` }).where(ofIssued(grants.id));
      const policy = { ...janitorPolicy(a.runtime.config), batchSize: 7 };
      const results = await Promise.all([sweep(a.runtime.db, policy), sweep(b.runtime.db, policy), sweep(a.runtime.db, policy), sweep(b.runtime.db, policy)]);
      expect(results.reduce((sum, result) => sum + result.refreshTokens, 0)).toBeGreaterThanOrEqual(30);
      expect(results.filter((result) => !result.skipped).length).toBeGreaterThan(0);
      // Whatever a skipped round left, the next round takes.
      await sweep(a.runtime.db, policy);
      expect((await operator.runtime.db.select({ n: count() }).from(refreshTokens).where(sql`${refreshTokens.expiresAt} < now() - interval '9 days'`))[0]!.n).toBe(0);
      expect((await operator.runtime.db.select({ n: count() }).from(grants).where(ofIssued(grants.id)))[0]!.n).toBe(0);
    });

    it('skips the round, deleting nothing, while another instance holds the sweep lock', async () => {
      const user = await buildUser(operator.runtime);
      const { grantId } = await obtainTokens(operator.app, operator.runtime, client, user);
      await operator.runtime.db.update(refreshTokens).set({ expiresAt: sql`now() - interval '10 days'` }).where(eq(refreshTokens.grantId, grantId));
      await operator.runtime.db.update(grants).set({ createdAt: sql`now() - interval '10 days'` }).where(eq(grants.id, grantId));
      const grantRows = async () => (await operator.runtime.db.select({ n: count() }).from(grants).where(eq(grants.id, grantId)))[0]!.n;
      const admin = postgres(database.url, { max: 1, onnotice: () => {} });
      try {
        const results = await admin.begin(async (tx) => {
          await tx`select pg_advisory_xact_lock(${JANITOR_LOCK_KEY})`;
          return Promise.all([sweep(a.runtime.db, janitorPolicy(a.runtime.config)), sweep(b.runtime.db, janitorPolicy(b.runtime.config))]);
        });
        for (const result of results) expect(result).toMatchObject({ skipped: true, refreshTokens: 0, grants: 0 });
      } finally {
        await admin.end();
      }
      expect(await grantRows()).toBe(1);
      expect(await sweep(b.runtime.db, janitorPolicy(b.runtime.config))).toMatchObject({ skipped: false, refreshTokens: 1, grants: 1 });
      expect(await grantRows()).toBe(0);
    });
  });

  describe('shared state of the APIs', () => {
    it('POST /orders with one Idempotency-Key on A and B at the same moment creates one order', async () => {
      const buyer = await issueTestToken(operator.runtime);
      const product = await buildProduct(operator.runtime, { name: 'Kettle', priceCents: 3000 });
      const key = randomUUID();
      const post = (at: Instance) =>
        request(at.app).post('/orders').set('Authorization', buyer.authorization).set('Idempotency-Key', key).send({ items: [{ productId: product.id, quantity: 1 }] });
      const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => post(i % 2 ? a : b)));
      expect(replies.map((reply) => reply.status)).toEqual(Array<number>(10).fill(201));
      expect(new Set(replies.map((reply) => reply.body.id)).size).toBe(1);
      expect((await operator.runtime.db.select({ n: count() }).from(orders).where(eq(orders.userId, buyer.userId)))[0]!.n).toBe(1);
    });

    it('a page token issued by A reads the next page on B', async () => {
      const reader = await issueTestToken(operator.runtime, { scope: 'products:read' });
      for (let i = 0; i < 3; i++) await buildProduct(operator.runtime, { name: `Paged ${i}` });
      const first = await request(a.app).get('/products?page_size=2').set('Authorization', reader.authorization);
      expect(first.status).toBe(200);
      const token = first.headers['next-page-token'] as string;
      expect(token).toBeTruthy();
      const second = await request(b.app).get(`/products?page_size=2&page_token=${encodeURIComponent(token)}`).set('Authorization', reader.authorization);
      expect(second.status).toBe(200);
      expect(second.body[0].id).toBeGreaterThan(first.body[1].id);
    });

    it('a GraphQL cursor issued by A reads the next page on B', async () => {
      const reader = await issueTestToken(operator.runtime, { scope: 'products:read' });
      const query = 'query ($after: String) { productsConnection(first: 2, after: $after) { edges { node { id } } pageInfo { endCursor hasNextPage } } }';
      for (let i = 0; i < 3; i++) await buildProduct(operator.runtime, { name: `Cursor ${i}` });
      type Page = { edges: { node: { id: string } }[]; pageInfo: { endCursor: string; hasNextPage: boolean } };
      const page = async (at: Instance, after?: string) => {
        const res = await request(at.app).post('/graphql').set('Authorization', reader.authorization).send({ query, variables: { after } });
        expect(res.status).toBe(200);
        return (res.body as { data: { productsConnection: Page } }).data.productsConnection;
      };
      const first = await page(a);
      expect(first.pageInfo.hasNextPage).toBe(true);
      const second = await page(b, first.pageInfo.endCursor);
      expect(second.edges[0]!.node.id).not.toBe(first.edges[1]!.node.id);
      expect(Number(second.edges[0]!.node.id)).toBeGreaterThan(Number(first.edges[1]!.node.id));
    });

    it('REGISTRATION_RATE_LIMIT counts the requests of both instances together, concurrent ones included', async () => {
      const register = (at: Instance) =>
        request(at.app).post('/register').send({ client_name: 'Agent', redirect_uris: ['https://agent.example/cb'] });
      const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => register(i % 2 ? a : b)));
      const statuses = replies.map((reply) => reply.status).sort();
      expect(statuses.filter((status) => status === 201)).toHaveLength(6);
      expect(statuses.filter((status) => status === 429)).toHaveLength(4);
    });
  });
});

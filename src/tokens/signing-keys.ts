/**
 * Keys live in the database so every instance uses one set; a retired key stays published until its tokens expire.
 * An unknown `kid` reloads the set (at most once a second: a request that comes sooner waits for the next reload rather
 * than being refused), so a rotation elsewhere verifies immediately; the JWKS served is at most a second old.
 * There is a current key per algorithm: ES256 signs access tokens and, by default, ID Tokens; RS256 exists because
 * OIDC Core §15.1 requires it for ID Tokens, and signs only what a client asked to have signed with it.
 */
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { createPrivateKey, type JsonWebKey } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { and, desc, eq, gt, inArray, isNull, lt, notInArray, or, sql } from 'drizzle-orm';
import type { Db } from '../db/database.js';
import { signingKeys } from '../db/schema.js';
import { POLICY } from '../policy.js';

/** The access tokens' algorithm, and the ID Tokens' unless a client registered another. */
export const SIGNING_ALG = 'ES256';
/** Every algorithm with a current key; ES256 first, as discovery lists them. */
export const SIGNING_ALGS = [SIGNING_ALG, 'RS256'] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];

export function isSigningAlg(value: unknown): value is SigningAlg {
  return (SIGNING_ALGS as readonly unknown[]).includes(value);
}
const RELOAD_INTERVAL_MS = POLICY.signingKeyReloadMs.value;
const UNKNOWN_KID_RELOAD_MIN_MS = POLICY.unknownKidReloadMinMs.value;
/** Slack for instances that have not yet noticed a rotation and still sign with the old key. */
const PUBLISH_MARGIN_SECONDS = 2 * (RELOAD_INTERVAL_MS / 1000);

export interface SigningKey {
  kid: string;
  alg: string;
  sign(claims: Record<string, unknown>, typ: string): string;
}

/** A published key and the one algorithm it may verify. */
export interface VerificationKey {
  alg: string;
  publicKey: CryptoKey;
}

interface LoadedKey {
  kid: string;
  alg: string;
  publicJwk: JWK;
  publicKey: CryptoKey;
  privateJwk: JWK;
  retiredAt: Date | null;
}

/** fast-jwt signs synchronously with node:crypto, cheaper than jose's WebCrypto job; verification stays with jose. */
function jwsSigner(key: LoadedKey): SigningKey['sign'] {
  const pem = createPrivateKey({ key: key.privateJwk as JsonWebKey, format: 'jwk' }).export({ type: 'pkcs8', format: 'pem' }) as string;
  const signers = new Map<string, (claims: Record<string, unknown>) => string>();
  return (claims, typ) => {
    let signer = signers.get(typ);
    if (!signer) {
      signer = createSigner({ algorithm: key.alg as SigningAlg, key: pem, kid: key.kid, header: { alg: key.alg, typ } });
      signers.set(typ, signer);
    }
    return signer(claims);
  };
}

async function newKeyRow(alg: SigningAlg) {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'RS256' ? { modulusLength: 2048 } : {}) });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return {
    kid,
    alg,
    publicJwk: { ...publicJwk, kid, alg, use: 'sig' },
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg },
  };
}

/**
 * Versions before RS256 sign with the newest current key, whatever its algorithm. Dating the other keys just before
 * their ES256 sibling keeps instances of such a version on ES256 during a rolling upgrade.
 */
const BEFORE_ES256 = sql`now() - interval '1 millisecond'`;

function currentKeys(db: Db) {
  return db.select({ alg: signingKeys.alg, createdAt: signingKeys.createdAt }).from(signingKeys).where(isNull(signingKeys.retiredAt));
}

function algorithmsWithoutKey(current: readonly { alg: string }[]): SigningAlg[] {
  return SIGNING_ALGS.filter((alg) => !current.some((key) => key.alg === alg));
}

/** Whether each algorithm has a current key, so `ensureSigningKey` has nothing to do. */
export async function hasSigningKeys(db: Db): Promise<boolean> {
  return algorithmsWithoutKey(await currentKeys(db)).length === 0;
}

/** Creates the current key of each algorithm that has none (run under the migration lock). */
export async function ensureSigningKey(db: Db): Promise<void> {
  const current = await currentKeys(db);
  const missing = algorithmsWithoutKey(current);
  if (!missing.length) return;
  const es256 = current.find((key) => key.alg === SIGNING_ALG)?.createdAt;
  const rows = await Promise.all(missing.map(newKeyRow));
  await db
    .insert(signingKeys)
    .values(rows.map((row) => (row.alg === SIGNING_ALG ? row : { ...row, createdAt: es256 ? new Date(es256.getTime() - 1) : BEFORE_ES256 })));
}

export interface RotatedKeys {
  /** The new access-token (ES256) key, or the first new key when that one was not rotated. */
  kid: string;
  /** Every key that stopped being current. */
  retired: string[];
  keys: { alg: SigningAlg; kid: string; retired: string[] }[];
}

/** Makes a new key current for each of `algs` (all by default). Keys retired longer ago than any token they signed can live are deleted. */
export async function rotateSigningKey(db: Db, accessTokenTtl: number, algs: readonly SigningAlg[] = SIGNING_ALGS): Promise<RotatedKeys> {
  const rows = await Promise.all(algs.map(newKeyRow));
  return db.transaction(async (tx) => {
    // Rotations elsewhere (two operators, `keys retire` meanwhile) wait here, then retire what the first one made: without
    // it both would find the same current keys and each add one, leaving two current keys per algorithm. Reads go on.
    await tx.execute(sql`lock table ${signingKeys} in share row exclusive mode`);
    const retired = await tx
      .update(signingKeys)
      .set({ retiredAt: sql`now()` })
      // Rotating the access-token key also retires a current key of an algorithm we no longer make (EdDSA, before ES256).
      .where(and(isNull(signingKeys.retiredAt), algs.includes(SIGNING_ALG) ? notInArray(signingKeys.alg, SIGNING_ALGS.filter((alg) => !algs.includes(alg))) : inArray(signingKeys.alg, [...algs])))
      .returning({ kid: signingKeys.kid, alg: signingKeys.alg });
    await tx.insert(signingKeys).values(rows.map((row) => (row.alg === SIGNING_ALG ? row : { ...row, createdAt: BEFORE_ES256 })));
    await tx
      .delete(signingKeys)
      .where(lt(signingKeys.retiredAt, sql`now() - make_interval(secs => ${accessTokenTtl + PUBLISH_MARGIN_SECONDS})`));
    const keys = rows.map((row) => ({ alg: row.alg, kid: row.kid, retired: retired.filter((r) => r.alg === row.alg).map((r) => r.kid) }));
    return { kid: (keys.find((key) => key.alg === SIGNING_ALG) ?? keys[0]!).kid, retired: retired.map((r) => r.kid), keys };
  });
}

export class KeyStore {
  private keys: LoadedKey[] = [];
  private loadedAt = 0;
  /**
   * When the query behind `keys` was sent (performance.now(): a wall clock set back must not make a request wait for a
   * load "after" it for as long): the set holds every key committed before then.
   */
  private keysQueriedAt = -Infinity;
  /** When the latest load, finished or under way, sent its query. */
  private lastQueriedAt = -Infinity;
  private loading: Promise<void> | undefined;
  /** The wait before the next reload an unknown kid may cause; shared by every request that waits for it. */
  private nextUnknownKidReload: Promise<void> | undefined;
  /** By algorithm; a signer is made again only when its key changes. */
  private currentSigningKeys = new Map<string, SigningKey>();

  constructor(
    private readonly db: Db,
    private readonly accessTokenTtl: number,
  ) {}

  private async load(): Promise<void> {
    const queriedAt = performance.now();
    this.lastQueriedAt = queriedAt;
    const rows = await this.db
      .select()
      .from(signingKeys)
      .where(
        or(
          isNull(signingKeys.retiredAt),
          gt(signingKeys.retiredAt, sql`now() - make_interval(secs => ${this.accessTokenTtl + PUBLISH_MARGIN_SECONDS})`),
        ),
      )
      .orderBy(desc(signingKeys.createdAt));
    const keys: LoadedKey[] = [];
    for (const row of rows) {
      keys.push({
        kid: row.kid,
        alg: row.alg,
        publicJwk: row.publicJwk as JWK,
        publicKey: (await importJWK(row.publicJwk as JWK, row.alg)) as CryptoKey,
        privateJwk: row.privateJwk as JWK,
        retiredAt: row.retiredAt,
      });
    }
    for (const alg of SIGNING_ALGS) {
      // Newest first: should two keys of one algorithm be current, every instance picks the same one.
      const current = keys.find((key) => key.retiredAt === null && key.alg === alg);
      if (current && current.kid !== this.currentSigningKeys.get(alg)?.kid) {
        this.currentSigningKeys.set(alg, { kid: current.kid, alg: current.alg, sign: jwsSigner(current) });
      }
    }
    this.keys = keys;
    this.keysQueriedAt = queriedAt;
    this.loadedAt = Date.now();
  }

  private reload(): Promise<void> {
    this.loading ??= this.load().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private async fresh(): Promise<void> {
    if (Date.now() - this.loadedAt > RELOAD_INTERVAL_MS) await this.reload();
  }

  /** The current key of `alg` (ES256, the access tokens', by default). */
  async signingKey(alg: SigningAlg = SIGNING_ALG): Promise<SigningKey> {
    await this.fresh();
    if (!this.currentSigningKeys.has(alg)) await this.reload();
    const key = this.currentSigningKeys.get(alg);
    if (!key) throw new Error(`no ${alg} signing key: run \`fieldgate migrate\` first`);
    return key;
  }

  /**
   * The public key for `kid` and its algorithm, reloading when the kid is unknown (a rotation elsewhere). Callers
   * verify with that algorithm only, and refuse a key whose algorithm does not sign what they read.
   */
  async verificationKey(kid: string | undefined): Promise<VerificationKey | undefined> {
    const askedAt = performance.now();
    await this.fresh();
    let key = this.keys.find((k) => k.kid === kid);
    if (!key && kid) {
      await this.loadSince(askedAt);
      key = this.keys.find((k) => k.kid === kid);
    }
    return key && { alg: key.alg, publicKey: key.publicKey };
  }

  /**
   * Resolves once `keys` comes from a query sent at `since` or later, so it holds every key committed before a token of it
   * could have arrived. A set loaded a moment before the rotation committed would otherwise refuse its tokens, so a
   * request that comes within UNKNOWN_KID_RELOAD_MIN_MS of the last query waits for the next one instead: made-up kids
   * still cost one query a second, however many arrive.
   */
  private async loadSince(since: number): Promise<void> {
    while (this.keysQueriedAt < since) {
      if (this.loading) {
        await this.loading;
        continue;
      }
      const wait = this.lastQueriedAt + UNKNOWN_KID_RELOAD_MIN_MS - performance.now();
      if (wait > 0) {
        this.nextUnknownKidReload ??= new Promise<void>((resolve) => setTimeout(resolve, wait).unref()).finally(() => {
          this.nextUnknownKidReload = undefined;
        });
        await this.nextUnknownKidReload;
        continue;
      }
      await this.reload();
    }
  }

  /**
   * Whether `kid` is among the keys loaded last, without waiting: a set older than the reload interval starts a reload
   * in the background. So a key withdrawn elsewhere (`keys retire`) is forgotten within about that interval, even by a
   * process that only answers from its caches.
   */
  knows(kid: string | undefined): boolean {
    if (Date.now() - this.loadedAt > RELOAD_INTERVAL_MS) void this.reload().catch(() => {});
    return kid !== undefined && this.keys.some((key) => key.kid === kid);
  }

  /**
   * At most a second old: a relying party or resource server fetches the set when it meets a kid, which another instance
   * may already sign with; a set as old as the reload interval would lack it. Such reloads cost one query a second at most.
   */
  async jwks(): Promise<{ keys: JWK[] }> {
    await this.loadSince(performance.now() - UNKNOWN_KID_RELOAD_MIN_MS);
    return { keys: this.keys.map((key) => key.publicJwk) };
  }

  invalidate(): Promise<void> {
    return this.reload();
  }
}

export interface SigningKeyInfo {
  kid: string;
  alg: string;
  createdAt: Date;
  retiredAt: Date | null;
  /** current: signs new tokens; published: retired, verifies tokens that may still be live; expired: no longer published. */
  state: 'current' | 'published' | 'expired';
}

export async function listSigningKeys(db: Db, accessTokenTtl: number): Promise<SigningKeyInfo[]> {
  const rows = await db
    .select({
      kid: signingKeys.kid,
      alg: signingKeys.alg,
      createdAt: signingKeys.createdAt,
      retiredAt: signingKeys.retiredAt,
      published: sql<boolean>`${signingKeys.retiredAt} > now() - make_interval(secs => ${accessTokenTtl + PUBLISH_MARGIN_SECONDS})`,
    })
    .from(signingKeys)
    .orderBy(desc(signingKeys.createdAt));
  return rows.map(({ published, ...row }) => ({
    ...row,
    state: row.retiredAt === null ? 'current' : published ? 'published' : 'expired',
  }));
}

/**
 * For a key that leaked: deleted, so its tokens stop verifying; a current key is first replaced by a new one of its
 * algorithm. `current` is the current key of that algorithm afterwards.
 */
export async function retireSigningKey(
  db: Db,
  kid: string,
  accessTokenTtl: number,
): Promise<{ retired: string; alg: string; current: string | undefined } | undefined> {
  const keys = await listSigningKeys(db, accessTokenTtl);
  const key = keys.find((k) => k.kid === kid);
  if (!key) return undefined;
  let current: string | undefined;
  if (key.state !== 'current') current = keys.find((k) => k.state === 'current' && k.alg === key.alg)?.kid;
  else if (isSigningAlg(key.alg)) current = (await rotateSigningKey(db, accessTokenTtl, [key.alg])).kid;
  // A current key of an algorithm we no longer make has no successor; it is retired so that it can be deleted.
  else await db.update(signingKeys).set({ retiredAt: sql`now()` }).where(eq(signingKeys.kid, kid));
  await db.delete(signingKeys).where(sql`${signingKeys.kid} = ${kid} and ${signingKeys.retiredAt} is not null`);
  return { retired: kid, alg: key.alg, current };
}

/**
 * Keys live in the database so every instance uses one set; a retired key stays published until its tokens expire.
 * An unknown `kid` reloads the set at once (at most once a second), so a rotation elsewhere verifies immediately.
 */
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { createPrivateKey, type JsonWebKey } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { desc, gt, isNull, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../db/database.js';
import { signingKeys } from '../db/schema.js';
import { POLICY } from '../policy.js';

export const SIGNING_ALG = 'ES256';
const RELOAD_INTERVAL_MS = POLICY.signingKeyReloadMs.value;
const UNKNOWN_KID_RELOAD_MIN_MS = POLICY.unknownKidReloadMinMs.value;
/** Slack for instances that have not yet noticed a rotation and still sign with the old key. */
const PUBLISH_MARGIN_SECONDS = 2 * (RELOAD_INTERVAL_MS / 1000);

export interface SigningKey {
  kid: string;
  alg: string;
  sign(claims: Record<string, unknown>, typ: string): string;
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
      signer = createSigner({ algorithm: key.alg as 'ES256', key: pem, kid: key.kid, header: { alg: key.alg, typ } });
      signers.set(typ, signer);
    }
    return signer(claims);
  };
}

async function newKeyRow() {
  const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return {
    kid,
    alg: SIGNING_ALG,
    publicJwk: { ...publicJwk, kid, alg: SIGNING_ALG, use: 'sig' },
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: SIGNING_ALG },
  };
}

export async function ensureSigningKey(db: Db): Promise<void> {
  const [current] = await db.select({ kid: signingKeys.kid }).from(signingKeys).where(isNull(signingKeys.retiredAt)).limit(1);
  if (!current) await db.insert(signingKeys).values(await newKeyRow());
}

/** Keys retired longer ago than any token they signed can live are deleted. */
export async function rotateSigningKey(db: Db, accessTokenTtl: number): Promise<{ kid: string; retired: string[] }> {
  const row = await newKeyRow();
  return db.transaction(async (tx) => {
    const retired = await tx
      .update(signingKeys)
      .set({ retiredAt: sql`now()` })
      .where(isNull(signingKeys.retiredAt))
      .returning({ kid: signingKeys.kid });
    await tx.insert(signingKeys).values(row);
    await tx
      .delete(signingKeys)
      .where(lt(signingKeys.retiredAt, sql`now() - make_interval(secs => ${accessTokenTtl + PUBLISH_MARGIN_SECONDS})`));
    return { kid: row.kid, retired: retired.map((r) => r.kid) };
  });
}

export class KeyStore {
  private keys: LoadedKey[] = [];
  private loadedAt = 0;
  private loading: Promise<void> | undefined;
  private currentSigningKey: SigningKey | undefined;

  constructor(
    private readonly db: Db,
    private readonly accessTokenTtl: number,
  ) {}

  private async load(): Promise<void> {
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
    const current = keys.find((key) => key.retiredAt === null);
    if (current && current.kid !== this.currentSigningKey?.kid) {
      this.currentSigningKey = {
        kid: current.kid,
        alg: current.alg,
        sign: jwsSigner(current),
      };
    }
    this.keys = keys;
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

  async signingKey(): Promise<SigningKey> {
    await this.fresh();
    if (!this.currentSigningKey) await this.reload();
    if (!this.currentSigningKey) throw new Error('no signing key: run `fieldgate migrate` first');
    return this.currentSigningKey;
  }

  /** The public key for `kid`, reloading once when the kid is unknown (a rotation elsewhere). */
  async verificationKey(kid: string | undefined): Promise<CryptoKey | undefined> {
    await this.fresh();
    let key = this.keys.find((k) => k.kid === kid);
    if (!key && kid && Date.now() - this.loadedAt > UNKNOWN_KID_RELOAD_MIN_MS) {
      await this.reload();
      key = this.keys.find((k) => k.kid === kid);
    }
    return key?.publicKey;
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

  async jwks(): Promise<{ keys: JWK[] }> {
    await this.fresh();
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

/** For a key that leaked: deleted, so its tokens stop verifying; a current key is first replaced. */
export async function retireSigningKey(db: Db, kid: string, accessTokenTtl: number): Promise<{ retired: string; current: string } | undefined> {
  const keys = await listSigningKeys(db, accessTokenTtl);
  const key = keys.find((k) => k.kid === kid);
  if (!key) return undefined;
  const current = key.state === 'current' ? (await rotateSigningKey(db, accessTokenTtl)).kid : keys.find((k) => k.state === 'current')!.kid;
  await db.delete(signingKeys).where(sql`${signingKeys.kid} = ${kid} and ${signingKeys.retiredAt} is not null`);
  return { retired: kid, current };
}

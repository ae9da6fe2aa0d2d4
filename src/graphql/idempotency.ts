/**
 * Idempotency keys for order creation (draft-ietf-httpapi-idempotency-key-header; the REST
 * `Idempotency-Key` header and GraphQL `createOrder(idempotencyKey:)` share them).
 *
 * A key belongs to one user and client and lives 24 hours. It is claimed by the first
 * statement of the transaction that creates the order, so:
 * - the key row and the order commit or roll back together (a failed request leaves no key);
 * - a concurrent request with the same key waits on the key's primary key until the first
 *   commits, then replays its order (or, had it rolled back, claims the key itself);
 * - the same key with another request is refused (IDEMPOTENCY_KEY_REUSED, HTTP 422).
 * An expired key that the janitor has not deleted yet is taken over by the next request.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/database.js';
import { idempotencyKeys } from '../db/schema.js';
import { GqlAborted, GqlFailedPrecondition } from './errors.js';

export const IDEMPOTENCY_KEY_TTL_SECONDS = 24 * 60 * 60;
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

export interface KeyOwner {
  userId: number;
  clientId: string;
}

/** Why `key` cannot be an idempotency key, or undefined when it can. */
export function idempotencyKeyProblem(key: string): string | undefined {
  if (key.length < 1 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) return `must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`;
  if (!/^[\x20-\x7e]+$/.test(key)) return 'must be printable ASCII';
  return undefined;
}

/** The fingerprint of an order request: SHA-256 of its normalized items and memo. */
export function orderRequestHash(items: readonly { productId: number; quantity: number }[], memo: string | null | undefined): string {
  const normalized = JSON.stringify({ items: items.map(({ productId, quantity }) => [productId, quantity]), memo: memo ?? null });
  return createHash('sha256').update(normalized).digest('base64url');
}

const ownedKey = (owner: KeyOwner, key: string) =>
  and(eq(idempotencyKeys.userId, owner.userId), eq(idempotencyKeys.clientId, owner.clientId), eq(idempotencyKeys.key, key));

const expiry = sql`now() + make_interval(secs => ${IDEMPOTENCY_KEY_TTL_SECONDS})`;

/**
 * Claims `key` inside the transaction about to create an order. Returns `{}` when this request
 * is the first (the caller creates the order, then calls `recordOrder`), or the id of the order
 * the first request created.
 */
export async function claimKey(tx: Tx, owner: KeyOwner, key: string, requestHash: string): Promise<{ replayOf?: number }> {
  const claimed = await tx
    .insert(idempotencyKeys)
    .values({ ...owner, key, requestHash, expiresAt: expiry })
    .onConflictDoUpdate({
      target: [idempotencyKeys.userId, idempotencyKeys.clientId, idempotencyKeys.key],
      set: { requestHash, orderId: null, response: null, createdAt: sql`now()`, expiresAt: expiry },
      setWhere: sql`${idempotencyKeys.expiresAt} <= now()`,
    })
    .returning({ key: idempotencyKeys.key });
  if (claimed.length > 0) return {};
  const [existing] = await tx.select({ requestHash: idempotencyKeys.requestHash, orderId: idempotencyKeys.orderId }).from(idempotencyKeys).where(ownedKey(owner, key));
  if (existing && existing.requestHash !== requestHash) {
    throw new GqlFailedPrecondition('this idempotency key was already used for a different request; use a new key for a new order', {
      extensions: { reason: 'IDEMPOTENCY_KEY_REUSED', field: 'idempotencyKey' },
    });
  }
  // Deleted (or its order deleted) between the two statements: nothing to replay, nothing claimed.
  if (existing?.orderId == null) throw new GqlAborted('the idempotency key changed while it was being used; try again', { extensions: { reason: 'IDEMPOTENCY_KEY_CONFLICT' } });
  return { replayOf: existing.orderId };
}

/**
 * Whether the createOrder run inside `run` answered with another request's order. A REST request learns it
 * this way because a duplicate that waited on the key gets its order from the mutation, not from a stored
 * answer, and must still be told it is a replay (`Idempotent-Replayed`).
 */
const replayNotices = new AsyncLocalStorage<{ replayed: boolean }>();

export async function noticingReplay<T>(run: () => Promise<T>): Promise<{ result: T; replayed: boolean }> {
  const notice = { replayed: false };
  const result = await replayNotices.run(notice, run);
  return { result, replayed: notice.replayed };
}

/** Called by createOrder once it has answered with the order the key's first request created. */
export function noteReplay(): void {
  const notice = replayNotices.getStore();
  if (notice) notice.replayed = true;
}

/** Ties a claimed key to the order its request created (same transaction as `claimKey`). */
export async function recordOrder(tx: Tx, owner: KeyOwner, key: string, orderId: number): Promise<void> {
  await tx.update(idempotencyKeys).set({ orderId }).where(ownedKey(owner, key));
}

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  /** The `fields` parameter of the request that produced it (null: none). */
  fields: string | null;
  /** The JSON body exactly as sent. */
  body: string;
}

/** The live key's fingerprint and first REST answer, if any. */
export async function findKey(db: Db, owner: KeyOwner, key: string): Promise<{ requestHash: string; orderId: number | null; response: StoredResponse | null } | undefined> {
  const [row] = await db
    .select({ requestHash: idempotencyKeys.requestHash, orderId: idempotencyKeys.orderId, response: idempotencyKeys.response })
    .from(idempotencyKeys)
    .where(and(ownedKey(owner, key), sql`${idempotencyKeys.expiresAt} > now()`));
  return row;
}

/** Keeps the first REST answer for `key` (a concurrent duplicate's answer does not replace it). */
export async function storeResponse(db: Db, owner: KeyOwner, key: string, orderId: number, response: StoredResponse): Promise<void> {
  await db
    .update(idempotencyKeys)
    .set({ response })
    .where(and(ownedKey(owner, key), eq(idempotencyKeys.orderId, orderId), sql`${idempotencyKeys.response} is null`));
}

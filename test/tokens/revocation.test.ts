/**
 * An access token's revocation check: one statement, its answer cached for REVOCATION_CACHE_MS so that a request in the
 * steady state reads only its data. The clock is stubbed: the tests that count a request's statements leave this check
 * out (test/support/sql.ts), and this file is where its caching is held to account.
 */
import { afterEach, expect, it, vi } from 'vitest';
import { REVOCATION_CACHE_MS, Revocations } from '../../src/tokens/revocation.js';
import type { Db } from '../../src/db/database.js';
import { describeEachDatabase } from '../support/runtime.js';
import { isRevocationCheck } from '../support/sql.js';
import { issueTestToken } from '../support/tokens.js';

describeEachDatabase('access token revocation check', (context) => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** The statements `run` sends, the revocation check included. */
  const allStatements = async (run: () => Promise<unknown>) => {
    const statements: string[] = [];
    const stop = context().runtime.database.onQuery((query) => statements.push(query));
    try {
      await run();
    } finally {
      stop();
    }
    return statements;
  };

  it('is one statement, which the statement-counting tests recognise and leave out', async () => {
    const { runtime } = context();
    const { principal } = await issueTestToken(runtime);
    const statements = await allStatements(() => runtime.revocations.isRevoked(principal.grantId, `${principal.jti}-fresh`));
    expect(statements).toHaveLength(1);
    expect(isRevocationCheck(statements[0]!)).toBe(true);
    expect(isRevocationCheck('select "d0"."id" as "id" from "products" as "d0" limit 51')).toBe(false);
  });

  it('asks the database once per token within the cache window, and again after it', async () => {
    const { runtime } = context();
    const { principal } = await issueTestToken(runtime);
    // Whole milliseconds: with a fractional start, start + (window - 1) + 1 - start can round to just under the window.
    let now = Math.round(performance.now()) + 60_000;
    vi.spyOn(performance, 'now').mockImplementation(() => now);
    const check = () => allStatements(() => runtime.revocations.isRevoked(principal.grantId, principal.jti));
    expect(await check()).toHaveLength(1);
    now += REVOCATION_CACHE_MS - 1;
    expect(await check()).toEqual([]);
    now += 1;
    expect(await check()).toHaveLength(1);
  });

  it('asks again once the window has passed even if the wall clock was set back meanwhile (NTP, a resumed VM)', async () => {
    const { runtime } = context();
    const { principal } = await issueTestToken(runtime);
    let elapsed = Math.round(performance.now()) + 60_000;
    let wall = Date.now();
    vi.spyOn(performance, 'now').mockImplementation(() => elapsed);
    vi.spyOn(Date, 'now').mockImplementation(() => wall);
    const check = () => allStatements(() => runtime.revocations.isRevoked(principal.grantId, principal.jti));
    expect(await check()).toHaveLength(1);
    wall -= 3_600_000;
    elapsed += REVOCATION_CACHE_MS;
    expect(await check()).toHaveLength(1);
  });

  it('forgets a cached answer at once when this instance revokes the token or its grant', async () => {
    const { runtime } = context();
    const { principal } = await issueTestToken(runtime);
    const other = await issueTestToken(runtime);
    vi.spyOn(performance, 'now').mockImplementation(() => 1_000_000_000);
    expect(await runtime.revocations.isRevoked(principal.grantId, principal.jti)).toBe(false);
    expect(await runtime.revocations.isRevoked(other.principal.grantId, other.principal.jti)).toBe(false);
    await runtime.revocations.revokeAccessToken(principal.jti, principal.expiresAt);
    await runtime.revocations.revokeGrant(other.principal.grantId);
    expect(await runtime.revocations.isRevoked(principal.grantId, principal.jti)).toBe(true);
    expect(await runtime.revocations.isRevoked(other.principal.grantId, other.principal.jti)).toBe(true);
  });

  it('keeps no answer read while this instance revoked the grant: the next request is refused at once', async () => {
    const { runtime } = context();
    const { principal } = await issueTestToken(runtime);
    // The real database; only the check's answer is held back until the revocation has finished, as a slow
    // connection of a busy pool would.
    let answered!: () => void;
    let release!: () => void;
    const read = new Promise<void>((resolve) => (answered = resolve));
    const held = new Promise<void>((resolve) => (release = resolve));
    const slowAnswers = new Proxy(runtime.db, {
      get(target, property, receiver) {
        if (property !== 'execute') return Reflect.get(target, property, receiver) as unknown;
        return async (...args: Parameters<Db['execute']>) => {
          const result = await target.execute(...args);
          answered();
          await held;
          return result;
        };
      },
    });
    const revocations = new Revocations(slowAnswers);
    const inFlight = revocations.isRevoked(principal.grantId, principal.jti);
    await read;
    await revocations.revokeGrant(principal.grantId);
    release();
    expect(await inFlight).toBe(false);
    expect(await revocations.isRevoked(principal.grantId, principal.jti)).toBe(true);
  });
});

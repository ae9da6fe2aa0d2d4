/**
 * Instances whose clocks lag the database's: the janitor and the revocation endpoint delete rows on the database's
 * clock, while each instance judges a JWT's age on its own. A row must outlive what any such instance still accepts.
 */
import { afterEach, expect, it, vi } from 'vitest';
import { sweep } from '../../src/oauth/janitor.js';
import { DpopVerifier } from '../../src/tokens/dpop.js';
import { Revocations } from '../../src/tokens/revocation.js';
import { describeEachDatabase, TEST_ISSUER } from '../support/runtime.js';
import { dpopKey, dpopProof } from '../support/dpop.js';
import { issueTestToken } from '../support/tokens.js';

const LAG_MS = 20_000;
const sweepEverythingDue = { retentionSeconds: 0, accessTokenTtl: 1, authCodeTtl: 1, batchSize: 1000 };

describeEachDatabase('JWT single use and revocation on an instance whose clock lags the database', (context) => {
  const realNow = Date.now.bind(Date);

  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** Runs `run` on this instance's clock, LAG_MS behind the database's (PGlite's now() reads the process clock too). */
  async function onLaggingClock<T>(run: () => Promise<T>): Promise<T> {
    const lagging = vi.spyOn(Date, 'now').mockImplementation(() => realNow() - LAG_MS);
    try {
      return await run();
    } finally {
      lagging.mockRestore();
    }
  }

  it('refuses a replayed DPoP proof after the janitor swept on the database clock', async () => {
    const { runtime } = context();
    const key = await dpopKey();
    const url = `${TEST_ISSUER}/products`;
    const verifier = new DpopVerifier(runtime.usedJtis, { proofMaxAge: 60, nonceKey: 'clock-skew-test' });
    // 50 s old on this instance's clock: still accepted here, yet past its window on the database's.
    const proof = await dpopProof(key, { htm: 'GET', htu: url, iat: Math.floor((realNow() - LAG_MS) / 1000) - 50 });
    const check = () => onLaggingClock(() => verifier.verify({ header: proof, method: 'GET', url, requireNonce: false }));
    expect(await check()).toEqual({ jkt: key.jkt });
    await sweep(runtime.db, sweepEverythingDue);
    await expect(check()).rejects.toThrow('this DPoP proof has already been used');
  });

  it('keeps refusing a revoked access token that has expired on the database clock but not on this instance', async () => {
    const { runtime } = context();
    const { principal } = await issueTestToken(runtime);
    // The token's exp as the database sees it: a few seconds ago.
    await runtime.revocations.revokeAccessToken(principal.jti, new Date(realNow() - 5_000));
    await sweep(runtime.db, sweepEverythingDue);
    expect(await new Revocations(runtime.db).isRevoked(principal.grantId, principal.jti)).toBe(true);
  });
});

/** PKCE helpers (RFC 7636): S256 only, verifier syntax, the RFC's own test vector. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { isValidCodeChallenge, isValidCodeVerifier, s256Challenge, verifyCodeVerifier } from '../../src/oauth/pkce.js';

describe('PKCE', () => {
  it('matches the RFC 7636 Appendix B example', () => {
    const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
    expect(s256Challenge(verifier)).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
    expect(verifyCodeVerifier(verifier, 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', 'S256')).toBe(true);
  });

  it('refuses the plain method even when verifier equals challenge', () => {
    const value = 'a'.repeat(43);
    expect(verifyCodeVerifier(value, value, 'plain')).toBe(false);
  });

  it('accepts exactly the verifiers of RFC 7636 §4.1 and their challenges', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9._~-]{43,128}$/), (verifier) => {
        expect(isValidCodeVerifier(verifier)).toBe(true);
        expect(isValidCodeChallenge(s256Challenge(verifier))).toBe(true);
        expect(verifyCodeVerifier(verifier, s256Challenge(verifier), 'S256')).toBe(true);
      }),
    );
    expect(isValidCodeVerifier('a'.repeat(42))).toBe(false);
    expect(isValidCodeVerifier('a'.repeat(129))).toBe(false);
    expect(isValidCodeVerifier(`${'a'.repeat(42)} `)).toBe(false);
  });

  it('a different verifier never verifies', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9._~-]{43,64}$/), fc.stringMatching(/^[A-Za-z0-9._~-]{43,64}$/), (a, b) => {
        fc.pre(a !== b);
        expect(verifyCodeVerifier(b, s256Challenge(a), 'S256')).toBe(false);
      }),
    );
  });
});

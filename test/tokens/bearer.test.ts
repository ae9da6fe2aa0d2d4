import { describe, expect, it } from 'vitest';
import { challengeHeaders, withResourceMetadata, wwwAuthenticate } from '../../src/tokens/bearer.js';
import { InsufficientScope, InvalidToken } from '../../src/oauth/errors.js';

const METADATA = 'https://api.example/.well-known/oauth-protected-resource';
const DPOP_OFFER = 'DPoP realm="fieldgate", algs="ES256 EdDSA Ed25519 RS256"';

describe('resource challenges (RFC 6750 §3, RFC 9449 §7.1, RFC 9728 §5.1)', () => {
  it('offers Bearer first and DPoP beside it when no token was sent', () => {
    const headers = challengeHeaders(new InvalidToken('an access token is required', { missing: true }));
    expect(headers['WWW-Authenticate']).toBe(`Bearer realm="fieldgate", ${DPOP_OFFER}`);
  });

  it('puts resource_metadata inside the Bearer challenge, before the DPoP offer', () => {
    const challenge = challengeHeaders(new InvalidToken('an access token is required', { missing: true }))['WWW-Authenticate']!;
    expect(withResourceMetadata(challenge, METADATA)).toBe(`Bearer realm="fieldgate", resource_metadata="${METADATA}", ${DPOP_OFFER}`);
    expect(withResourceMetadata(withResourceMetadata(challenge, METADATA), METADATA)).toBe(withResourceMetadata(challenge, METADATA));
  });

  it('answers a refused token with only the scheme it was sent with', () => {
    const bearer = challengeHeaders(new InvalidToken('the access token expired'))['WWW-Authenticate']!;
    expect(bearer).toBe('Bearer realm="fieldgate", error="invalid_token", error_description="the access token expired"');
    const dpop = challengeHeaders(new InvalidToken('a DPoP proof is required', { dpop: { error: 'invalid_dpop_proof' } }))['WWW-Authenticate']!;
    expect(dpop).toMatch(/^DPoP realm="fieldgate", algs="[^"]+", error="invalid_dpop_proof"/);
    expect(dpop).not.toContain('Bearer');
    expect(withResourceMetadata(bearer, METADATA)).toBe(`${bearer}, resource_metadata="${METADATA}"`);
  });

  it('cannot be made to look like a DPoP offer by a quoted description', () => {
    const hostile = new InvalidToken(`x", ${DPOP_OFFER}`);
    const challenge = challengeHeaders(hostile)['WWW-Authenticate']!;
    expect(challenge).not.toContain(`, ${DPOP_OFFER}`);
    expect(withResourceMetadata(challenge, METADATA).endsWith(`resource_metadata="${METADATA}"`)).toBe(true);
  });

  it('keeps the insufficient-scope challenge Bearer-only, naming the scope', () => {
    expect(wwwAuthenticate(new InsufficientScope('orders:write'))).toBe(
      'Bearer realm="fieldgate", error="insufficient_scope", error_description="this request needs the scope orders:write", scope="orders:write"',
    );
  });
});

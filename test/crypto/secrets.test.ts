import { describe, expect, it } from 'vitest';
import { randomIdentifier } from '../../src/crypto/secrets.js';

describe('randomIdentifier', () => {
  it('never starts with - or _, so `fieldgate consent revoke --client ID` never reads an id as an option', () => {
    // A plain base64url token starts with one of them once in 32 draws.
    const ids = Array.from({ length: 5_000 }, () => randomIdentifier(16));
    expect(ids.filter((id) => /^[-_]/.test(id))).toEqual([]);
  });

  it('keeps 128 bits in base64url: 22 characters, all distinct across draws', () => {
    const ids = Array.from({ length: 1_000 }, () => randomIdentifier(16));
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9][A-Za-z0-9_-]{21}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

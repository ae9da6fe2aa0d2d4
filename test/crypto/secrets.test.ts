import { describe, expect, it } from 'vitest';
import { randomIdentifier, randomToken } from '../../src/crypto/secrets.js';

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

describe('randomToken', () => {
  it('gives the asked number of bytes, each token distinct, across many refills of its pool', () => {
    for (const bytes of [12, 16, 32, 33, 2_048]) {
      const tokens = Array.from({ length: 600 }, () => randomToken(bytes));
      for (const token of tokens) expect(Buffer.from(token, 'base64url')).toHaveLength(bytes);
      expect(new Set(tokens).size).toBe(tokens.length);
    }
  });

  it('draws uniform bytes: over 64 KiB every byte value appears, none far from its share', () => {
    const counts = new Array<number>(256).fill(0);
    for (let i = 0; i < 2_048; i++) for (const byte of Buffer.from(randomToken(32), 'base64url')) counts[byte]!++;
    // 65,536 bytes: 256 expected per value; six standard deviations (~96) either side.
    expect(Math.min(...counts)).toBeGreaterThan(256 - 96);
    expect(Math.max(...counts)).toBeLessThan(256 + 96);
  });

  it('never hands out bytes that overlap an earlier token: consecutive tokens share no 8-byte window', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 1_000; i++) {
      const bytes = Buffer.from(randomToken(32), 'base64url');
      for (let at = 0; at + 8 <= bytes.length; at += 8) {
        const window = bytes.toString('hex', at, at + 8);
        expect(seen.has(window)).toBe(false);
        seen.add(window);
      }
    }
  });
});

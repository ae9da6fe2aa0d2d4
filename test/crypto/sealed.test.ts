/**
 * A sealed value opens only with the deployment's secret, for the purpose it was sealed for, unaltered, and during the
 * hour it was sealed in or the next; anything else opens to undefined, never to an exception.
 */
import { describe, expect, it } from 'vitest';
import { Sealer } from '../../src/crypto/sealed.js';

const HOUR = 3_600_000;
const content = { g: 'grant', u: 42, scope: 'products:read', nested: { list: [1, 'two', null] } };

describe('Sealer', () => {
  const sealer = new Sealer('deployment secret', 'authorization code');

  it('opens what it sealed, and the sealed text shows nothing of the content', () => {
    const sealed = sealer.seal(content);
    expect(sealer.open(sealed)).toEqual(content);
    const decoded = Buffer.from(sealed.split('.')[1]!, 'base64url').toString('latin1');
    for (const part of ['grant', 'products:read', 'scope', 'two']) expect(decoded).not.toContain(part);
  });

  it('seals the same content differently every time', () => {
    expect(sealer.seal(content)).not.toBe(sealer.seal(content));
  });

  it('opens with another instance of the same secret and purpose, not with another secret or purpose', () => {
    const sealed = sealer.seal(content);
    expect(new Sealer('deployment secret', 'authorization code').open(sealed)).toEqual(content);
    expect(new Sealer('another secret', 'authorization code').open(sealed)).toBeUndefined();
    expect(new Sealer('deployment secret', 'page token').open(sealed)).toBeUndefined();
  });

  it('refuses any change to any byte', () => {
    const sealed = sealer.seal(content);
    const dot = sealed.indexOf('.');
    const bytes = Buffer.from(sealed.slice(dot + 1), 'base64url');
    for (let at = 0; at < bytes.length; at++) {
      const altered = Buffer.from(bytes);
      altered[at]! ^= 0x01;
      expect(sealer.open(`${sealed.slice(0, dot)}.${altered.toString('base64url')}`)).toBeUndefined();
    }
    expect(sealer.open(`${sealed.slice(0, dot)}.${bytes.subarray(0, bytes.length - 1).toString('base64url')}`)).toBeUndefined();
    expect(sealer.open(`${sealed}AA`)).toBeUndefined();
  });

  it('opens during the hour it was sealed in and the next, not after', () => {
    const sealedAt = Date.UTC(2026, 11, 4, 10, 59, 59);
    const sealed = sealer.seal(content, sealedAt);
    expect(sealer.open(sealed, sealedAt)).toEqual(content);
    expect(sealer.open(sealed, sealedAt + 1000)).toEqual(content); // the next hour
    expect(sealer.open(sealed, sealedAt + HOUR)).toEqual(content);
    expect(sealer.open(sealed, sealedAt + HOUR + 1000)).toBeUndefined();
    expect(sealer.open(sealed, sealedAt + 5 * HOUR)).toBeUndefined();
  });

  it('opens on an instance whose clock is still in the hour before, not earlier', () => {
    const sealedAt = Date.UTC(2026, 11, 4, 11, 0, 0, 500);
    const sealed = sealer.seal(content, sealedAt);
    expect(sealer.open(sealed, sealedAt - 1000)).toEqual(content); // a second behind: 10:59:59.5
    expect(sealer.open(sealed, sealedAt - HOUR - 1000)).toBeUndefined();
  });

  it('refuses a value relabelled with another hour', () => {
    const now = Date.UTC(2026, 11, 4, 10, 30);
    const sealed = sealer.seal(content, now);
    const [hour, rest] = sealed.split('.') as [string, string];
    const previous = (Number.parseInt(hour, 36) - 1).toString(36);
    expect(sealer.open(`${previous}.${rest}`, now)).toBeUndefined();
    // The same hour spelled another way is not ours either.
    expect(sealer.open(`0${hour}.${rest}`, now)).toBeUndefined();
    expect(sealer.open(`${hour.toUpperCase()}.${rest}`, now)).toBeUndefined();
  });

  it.each([
    ['empty', ''],
    ['no dot', 'abc'],
    ['no hour', '.abc'],
    ['not base64url', `${Math.floor(Date.now() / HOUR).toString(36)}.***`],
    ['too short for a tag', `${Math.floor(Date.now() / HOUR).toString(36)}.AAAA`],
    ['far too long', `${Math.floor(Date.now() / HOUR).toString(36)}.${'A'.repeat(5000)}`],
    ['a JWT', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl'],
  ])('refuses %s input', (_name, input) => {
    expect(sealer.open(input)).toBeUndefined();
  });
});

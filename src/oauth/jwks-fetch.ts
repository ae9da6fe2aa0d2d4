/**
 * Fetches a client's `jwks_uri` without opening an SSRF path: https only, every resolved address public (checked in the
 * socket's own lookup, so DNS cannot change in between), no redirects, a size limit and a deadline.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { isSpecialPurposeAddress } from '../http/special-purpose-addresses.js';

export const JWKS_MAX_BYTES = 64 * 1024;
export const JWKS_FETCH_TIMEOUT_MS = 5_000;

export class JwksFetchError extends Error {
  override readonly name = 'JwksFetchError';
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

function publicOnlyLookup(hostname: string, options: dns.LookupOptions, callback: LookupCallback): void {
  dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    if (addresses.length === 0 || addresses.some((entry) => isSpecialPurposeAddress(entry.address))) {
      return callback(Object.assign(new JwksFetchError(`${hostname} resolves to a non-public address`), { code: 'EFORBIDDEN' }), []);
    }
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

export async function fetchJwks(uri: string, options: { allowPrivate: boolean }): Promise<unknown> {
  const url = new URL(uri);
  if (url.protocol !== 'https:' && !(options.allowPrivate && url.protocol === 'http:')) throw new JwksFetchError('jwks_uri must use https');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  // An IP literal never goes through the lookup.
  if (!options.allowPrivate && net.isIP(host) && isSpecialPurposeAddress(host)) throw new JwksFetchError('jwks_uri names a non-public address');
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      url,
      {
        method: 'GET',
        headers: { accept: 'application/json, application/jwk-set+json' },
        ...(options.allowPrivate ? {} : { lookup: publicOnlyLookup as unknown as typeof dns.lookup }),
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new JwksFetchError(`jwks_uri answered HTTP ${res.statusCode} (redirects are not followed)`));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > JWKS_MAX_BYTES) req.destroy(new JwksFetchError(`the JWK Set is larger than ${JWKS_MAX_BYTES} bytes`));
          else chunks.push(chunk);
        });
        res.on('end', () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          } catch (error) {
            reject(new JwksFetchError('the JWK Set is not JSON', { cause: error }));
          }
        });
        res.on('error', reject);
      },
    );
    const deadline = setTimeout(() => req.destroy(new JwksFetchError('jwks_uri did not answer in time')), JWKS_FETCH_TIMEOUT_MS);
    req.on('close', () => clearTimeout(deadline));
    req.on('error', (error) => reject(error instanceof JwksFetchError ? error : new JwksFetchError('jwks_uri could not be fetched', { cause: error })));
    req.end();
  });
}

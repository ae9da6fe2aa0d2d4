/**
 * Reads a POST /graphql JSON body before graphql-yoga sees the request, so yoga takes its
 * ready-parsed-body path instead of adapting the Node stream into a fetch ReadableStream,
 * piping it through its size-limit TransformStream and decoding it again.
 * Measured gain and removal condition: docs/PERFORMANCE.md.
 *
 * Yoga's answers stay its own: a body that parses to a non-empty object (one operation) or
 * array (a batch, refused by yoga) is handed over parsed; anything else (bad JSON, `null`, a
 * scalar, `{}`) is handed over as the text, which yoga parses and refuses with its usual errors.
 * JSON is UTF-8 (RFC 8259 §8.1): a body that is not is refused (an error of type NOT_UTF8 for
 * the router to answer 400) rather than run with U+FFFD in its strings, and a leading byte order
 * mark is ignored, as RFC 8259 allows and the REST layer does. Yoga's reader would do neither, so
 * a JSON body without a plain decimal Content-Length (a chunked upload) is read here too, by
 * body-parser, which holds it to the limit while streaming.
 *
 * The other body types yoga parses (application/graphql, a form) are read as UTF-8 text and held
 * to the same rule, then handed over as that text.
 *
 * Yoga does not decode a Content-Encoding, so a compressed body of any type is read here, by
 * body-parser, which inflates gzip, deflate and br, holds the inflated size to the limit and
 * refuses other codings (415) and corrupt data (400) by passing the error on.
 */
import express, { type NextFunction, type Request, type RequestHandler } from 'express';
import { isEncoded } from '../http/content-coding.js';
import { repeatedMemberProblem } from '../http/json-members.js';

const DECIMAL = /^\d+$/;

declare module 'http' {
  interface IncomingMessage {
    /** The request body as read by `readTextBody`: parsed, or as text when yoga should parse it. */
    body?: unknown;
  }
}

/** Yoga's own test of a body's type (request-parser/post-json.ts and its siblings), so both agree on what a body is. */
function isOneOf(contentType: string | undefined, types: readonly string[]): boolean {
  const type = contentType?.split(',')[0];
  return !!type && types.some((expected) => type === expected || type.startsWith(`${expected};`));
}

const JSON_TYPES = ['application/json', 'application/graphql+json'];
/** Every body type yoga reads as text: JSON, and request-parser/post-graphql-string.ts' and post-form-url-encoded.ts'. */
const TEXT_TYPES = [...JSON_TYPES, 'application/graphql', 'application/x-www-form-urlencoded'];

const isJsonPost = (contentType: string | undefined) => isOneOf(contentType, JSON_TYPES);

/** The `type` of the error a body that is not UTF-8 is passed on with (`json`: whether it was declared JSON). */
export const NOT_UTF8 = 'entity.not.utf8';

// Fatal: invalid bytes throw instead of becoming U+FFFD. A leading BOM is dropped (ignoreBOM: false).
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The body's text, or a NOT_UTF8 error (status 400) to pass on; `json` says whether the body was declared JSON. */
function decode(bytes: Uint8Array, json: boolean): string | Error {
  try {
    return UTF8.decode(bytes);
  } catch {
    return Object.assign(new Error('the request body is not valid UTF-8'), { status: 400, type: NOT_UTF8, expose: true, json });
  }
}

/** The `type` of the error a JSON body naming a member twice is passed on with (`field` names its path). */
export const REPEATED_MEMBER = 'entity.member.repeated';

/**
 * What yoga should receive as the body: the parsed value when yoga would use it as is, else the text; or an error of
 * type REPEATED_MEMBER for JSON that names a member twice, which JSON.parse would read as its last copy.
 */
function handOver(text: string, json: boolean): unknown {
  if (text === '') return undefined;
  if (!json) return text;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  const repeated = repeatedMemberProblem(text);
  if (repeated) return Object.assign(new Error(repeated.message), { status: 400, type: REPEATED_MEMBER, expose: true, field: repeated.field });
  return typeof value === 'object' && value !== null && Object.keys(value).length > 0 ? value : text;
}

/** Sets `req.body` from the bytes read, or passes on why it cannot (not UTF-8, a member named twice). */
function acceptBytes(req: Request, bytes: Buffer, next: NextFunction): void {
  const json = isJsonPost(req.headers['content-type']);
  const text = decode(bytes, json);
  if (text instanceof Error) return next(text);
  const body = handOver(text, json);
  if (body instanceof Error) return next(body);
  req.body = body;
  next();
}

/**
 * Reads a compressed body (inflated) or a chunked one; what yoga receives is what it would
 * have for the same body sent plain with a Content-Length.
 */
function readBufferedBody(maxBytes: number): RequestHandler {
  const inflate = express.raw({ type: () => true, limit: maxBytes });
  return function readBufferedBody(req, res, next) {
    inflate(req, res, (error?: unknown) => {
      if (error !== undefined) return next(error);
      acceptBytes(req, Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0), next);
    });
  };
}

/** `maxBytes`: bodies declared larger are not read here (the caller refuses them first). */
export function readTextBody(maxBytes: number): RequestHandler {
  const bufferedBody = readBufferedBody(maxBytes);
  return function readTextBody(req, res, next) {
    if (req.method === 'POST' && isEncoded(req.headers['content-encoding'])) return bufferedBody(req, res, next);
    if (req.method !== 'POST' || !isOneOf(req.headers['content-type'], TEXT_TYPES)) return next();
    const length = req.headers['content-length'];
    if (length === undefined || !DECIMAL.test(length)) return req.headers['transfer-encoding'] === undefined ? next() : bufferedBody(req, res, next);
    const declared = Number(length);
    if (declared === 0 || declared > maxBytes) return next();
    const chunks: Buffer[] = [];
    let received = 0;
    req.on('data', (chunk: Buffer) => {
      received += chunk.length;
      chunks.push(chunk);
    });
    req.once('end', () => {
      // Node's parser stops at Content-Length, so `received` never exceeds it.
      acceptBytes(req, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received), next);
    });
    req.once('error', (error) => next(error));
  };
}

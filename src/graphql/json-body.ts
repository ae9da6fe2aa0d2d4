/**
 * Reads a POST /graphql JSON body before graphql-yoga sees the request, so yoga takes its
 * ready-parsed-body path instead of adapting the Node stream into a fetch ReadableStream,
 * piping it through its size-limit TransformStream and decoding it again.
 * Measured gain and removal condition: docs/PERFORMANCE.md.
 *
 * Yoga's answers stay its own: a body that parses to a non-empty object (one operation) or
 * array (a batch, refused by yoga) is handed over parsed; anything else (bad JSON, `null`, a
 * scalar, `{}`) is handed over as the text, which yoga parses and refuses with its usual errors.
 * Requests without a plain decimal Content-Length (chunked uploads) are left to yoga's reader,
 * which enforces the body limit while streaming.
 *
 * Yoga does not decode a Content-Encoding, so a compressed body of any type is read here, by
 * body-parser, which inflates gzip, deflate and br, holds the inflated size to the limit and
 * refuses other codings (415) and corrupt data (400) by passing the error on.
 */
import express, { type RequestHandler } from 'express';

const DECIMAL = /^\d+$/;

declare module 'http' {
  interface IncomingMessage {
    /** The request body as read by `readJsonBody`: parsed, or as text when yoga should parse it. */
    body?: unknown;
  }
}

/** Yoga's own test for its JSON parser (request-parser/post-json.ts), so both agree on which bodies are JSON. */
function isJsonPost(contentType: string | undefined): boolean {
  const type = contentType?.split(',')[0];
  if (!type) return false;
  return ['application/json', 'application/graphql+json'].some((expected) => type === expected || type.startsWith(`${expected};`));
}

/** What yoga should receive as the body: the parsed value when yoga would use it as is, else the text. */
function handOver(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  return typeof value === 'object' && value !== null && Object.keys(value).length > 0 ? value : text;
}

function isEncoded(contentEncoding: string | undefined): boolean {
  const coding = contentEncoding?.trim().toLowerCase();
  return coding !== undefined && coding !== '' && coding !== 'identity';
}

/** Inflates a compressed body; what yoga receives is what it would have for the same body sent plain. */
function readEncodedBody(maxBytes: number): RequestHandler {
  const inflate = express.raw({ type: () => true, limit: maxBytes });
  return function readEncodedBody(req, res, next) {
    inflate(req, res, (error?: unknown) => {
      if (error !== undefined) return next(error);
      const text = Buffer.isBuffer(req.body) ? req.body.toString('utf-8') : '';
      req.body = text === '' ? undefined : isJsonPost(req.headers['content-type']) ? handOver(text) : text;
      next();
    });
  };
}

/** `maxBytes`: bodies declared larger are not read here (the caller refuses them first). */
export function readJsonBody(maxBytes: number): RequestHandler {
  const encodedBody = readEncodedBody(maxBytes);
  return function readJsonBody(req, res, next) {
    if (req.method === 'POST' && isEncoded(req.headers['content-encoding'])) return encodedBody(req, res, next);
    const length = req.headers['content-length'];
    if (req.method !== 'POST' || !isJsonPost(req.headers['content-type']) || length === undefined || !DECIMAL.test(length)) return next();
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
      const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received)).toString('utf-8');
      req.body = text === '' ? undefined : handOver(text);
      next();
    });
    req.once('error', (error) => next(error));
  };
}

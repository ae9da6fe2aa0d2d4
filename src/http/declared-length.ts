/**
 * body-parser refuses a body larger than its limit only once the whole body has arrived, which it reads off to keep the
 * connection usable: a client declaring `Content-Length: 100000000` and sending nothing got its 413 after the 30 s
 * request timeout, holding a connection until then (and `Expect: 100-continue` invited the 100 MB). A declared length
 * over the limit is refused at once, with the error body-parser itself would give, and the connection is closed instead
 * of read. A chunked body over the limit is still cut off by the parser as it arrives.
 */
import type { RequestHandler } from 'express';

/** The error body-parser raises for a body over its limit (`type` and `status` are what the faces map). */
export class DeclaredBodyTooLarge extends Error {
  readonly type = 'entity.too.large';
  readonly status = 413;
  readonly statusCode = 413;
  readonly expose = true;
  constructor(
    readonly expected: number,
    readonly limit: number,
  ) {
    super('request entity too large');
  }
}

/** `parser`, preceded by the refusal of a body declared larger than `limit` bytes. */
export function withinDeclaredLength(limit: number, parser: RequestHandler): RequestHandler {
  return function refuseDeclaredOversize(req, res, next) {
    const declared = Number(req.headers['content-length']);
    if (declared > limit) {
      res.setHeader('Connection', 'close');
      next(new DeclaredBodyTooLarge(declared, limit));
      return;
    }
    return parser(req, res, next);
  };
}

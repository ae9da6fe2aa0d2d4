/**
 * RFC 6749 §3.1, §3.2: a parameter without a value counts as omitted and may not be repeated. Repetition is checked
 * only for the parameters an endpoint knows; unknown ones are ignored, as the RFC asks.
 */
import { isUtf8 } from 'node:buffer';
import express, { type RequestHandler } from 'express';
import { InvalidRequest, InvalidHttpRequest } from './errors.js';
import { refusingUnsentBodyOver } from '../http/expect-continue.js';

export const FORM_BODY_LIMIT_BYTES = 16 * 1024;

const NONE: ReadonlySet<string> = new Set();
/** An escape of a byte above 0x7F: only these can be out of UTF-8 (`%3A`, `%2F`, `%20` never are). */
const NON_ASCII_ESCAPE = /%[89a-f][0-9a-f]/i;

export class Parameters {
  private constructor(
    private readonly values: ReadonlyMap<string, readonly string[]>,
    /** Parameters with a value whose percent-encoded bytes are not UTF-8 (URLSearchParams makes each such byte U+FFFD). */
    private readonly notUtf8: ReadonlySet<string> = NONE,
  ) {}

  static parse(encoded: string): Parameters {
    const values = new Map<string, string[]>();
    for (const [name, value] of new URLSearchParams(encoded)) {
      if (value === '') continue;
      const list = values.get(name);
      if (list) list.push(value);
      else values.set(name, [value]);
    }
    return new Parameters(values, NON_ASCII_ESCAPE.test(encoded) ? namesWithValuesNotUtf8(encoded) : NONE);
  }

  static readonly empty = new Parameters(new Map());

  /** A NUL is invalid_request: no protocol value has one, and PostgreSQL text cannot hold it. */
  get(name: string): string | undefined {
    const list = this.values.get(name);
    if (!list) return undefined;
    if (list.length > 1) throw new InvalidRequest(`the ${name} parameter is repeated`);
    this.refuseUnreadable(name, list);
    return list[0];
  }

  getAll(name: string): string[] {
    const list = this.values.get(name) ?? [];
    this.refuseUnreadable(name, list);
    return [...list];
  }

  /** Only the parameters an endpoint reads are checked: unknown ones are ignored, whatever they hold. */
  private refuseUnreadable(name: string, list: readonly string[]): void {
    if (this.notUtf8.has(name)) throw new InvalidRequest(`the ${name} parameter is not valid percent-encoded UTF-8`);
    if (list.some((value) => value.includes('\0'))) throw new InvalidRequest(`the ${name} parameter contains a NUL character`);
  }

  require(name: string): string {
    const value = this.get(name);
    if (value === undefined) throw new InvalidRequest(`the ${name} parameter is missing`);
    return value;
  }

  has(name: string): boolean {
    return this.values.has(name);
  }

  isRepeated(name: string): boolean {
    return (this.values.get(name)?.length ?? 0) > 1;
  }

  rejectRepeated(names: Iterable<string>): void {
    for (const name of names) if (this.isRepeated(name)) throw new InvalidRequest(`the ${name} parameter is repeated`);
  }

  toString(): string {
    const search = new URLSearchParams();
    for (const [name, list] of this.values) for (const value of list) search.append(name, value);
    return search.toString();
  }
}

/**
 * The names (decoded as URLSearchParams decodes them) whose value percent-encodes bytes that are not UTF-8, such as `%FF`
 * or half of a character: such a value would reach the endpoint with U+FFFD in place of what was sent, so distinct
 * inputs would read alike. Malformed escapes (`%zz`) stay literal text, as URLSearchParams leaves them.
 */
function namesWithValuesNotUtf8(encoded: string): ReadonlySet<string> {
  let names: Set<string> | undefined;
  for (const pair of encoded.split('&')) {
    const equals = pair.indexOf('=');
    if (equals < 0 || !NON_ASCII_ESCAPE.test(pair.slice(equals + 1)) || isUtf8(percentDecode(pair.slice(equals + 1)))) continue;
    for (const name of new URLSearchParams(`${pair.slice(0, equals)}=`).keys()) (names ??= new Set()).add(name);
  }
  return names ?? NONE;
}

/** The bytes `%XX` escapes stand for, everything else as its UTF-8 bytes (the WHATWG URL standard's percent-decode). */
function percentDecode(text: string): Buffer {
  const input = Buffer.from(text, 'utf8');
  const output = Buffer.allocUnsafe(input.length);
  let length = 0;
  for (let i = 0; i < input.length; i++) {
    if (input[i] === 0x25 && i + 2 < input.length && isHexDigit(input[i + 1]!) && isHexDigit(input[i + 2]!)) {
      output[length++] = Number.parseInt(String.fromCharCode(input[i + 1]!, input[i + 2]!), 16);
      i += 2;
    } else {
      output[length++] = input[i]!;
    }
  }
  return output.subarray(0, length);
}

function isHexDigit(byte: number): boolean {
  return (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66);
}

/** From the raw URL, not Express' parser. */
export function queryParameters(originalUrl: string): Parameters {
  const index = originalUrl.indexOf('?');
  return index < 0 ? Parameters.empty : Parameters.parse(originalUrl.slice(index + 1));
}

const FORM_TYPE = 'application/x-www-form-urlencoded';

/**
 * No Content-Type and nothing to read: an empty form. A client that authenticates with Basic and has no parameter to send
 * (RFC 8628 §3.1 without `scope`) sends just that — Python's requests with `Content-Length: 0`, curl with no length.
 */
function isEmptyUntypedBody(req: express.Request): boolean {
  const length = req.get('content-length');
  return req.get('content-type') === undefined && req.get('transfer-encoding') === undefined && (length === undefined || length.trim() === '0');
}

function requireFormContentType(req: express.Request, _res: express.Response, next: express.NextFunction): void {
  if (isEmptyUntypedBody(req)) {
    next();
    return;
  }
  // type-is answers null when there is no body at all and false for another media type.
  if (!req.is(FORM_TYPE)) {
    next(new InvalidRequest(`the request body must be ${FORM_TYPE}`));
    return;
  }
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(req.get('content-type') ?? '')?.[1];
  if (charset && charset.toLowerCase() !== 'utf-8') {
    next(new InvalidRequest('the request body must be UTF-8'));
    return;
  }
  next();
}

const rawBodyParser = refusingUnsentBodyOver(FORM_BODY_LIMIT_BYTES, express.raw({ type: () => true, limit: FORM_BODY_LIMIT_BYTES }));

/** Hands on body-read failures already as OAuth errors, so every page and endpoint using `formBody` answers them alike. */
function readRawBody(req: express.Request, res: express.Response, next: express.NextFunction): void {
  rawBodyParser(req, res, (error?: unknown) => next(error === undefined ? undefined : (bodyReadError(error) ?? error)));
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function decodeFormBody(req: express.Request, res: express.Response, next: express.NextFunction): void {
  const raw: unknown = req.body;
  let text = '';
  if (Buffer.isBuffer(raw)) {
    try {
      text = utf8.decode(raw);
    } catch (error) {
      next(new InvalidRequest('the request body is not valid UTF-8', { cause: error }));
      return;
    }
  }
  res.locals.params = Parameters.parse(text);
  next();
}

export const formBody: RequestHandler[] = [requireFormContentType, readRawBody, decodeFormBody];

/**
 * Runs `formBody` inside a handler, for an endpoint that reads a body only sometimes and answers the steps' refusals in
 * its own way (they reject the promise); the parameters are then `bodyParameters(res)`.
 */
export async function readFormBody(req: express.Request, res: express.Response): Promise<Parameters> {
  for (const step of formBody) {
    await new Promise<void>((resolve, reject) => {
      void step(req, res, (error?: unknown) => (error === undefined ? resolve() : reject(error as Error)));
    });
  }
  return bodyParameters(res);
}

export function bodyParameters(res: express.Response): Parameters {
  const params: unknown = res.locals.params;
  if (!(params instanceof Parameters)) throw new Error('formBody must run before bodyParameters');
  return params;
}

/**
 * What body-parser refuses is the client's fault (4xx): a body over the limit, a Content-Encoding it cannot decode
 * (415), or one it can but whose data is corrupt — zlib's error, given `status: 400` but no `type`.
 */
export function bodyReadError(error: unknown): InvalidRequest | InvalidHttpRequest | undefined {
  const type = (error as { type?: unknown } | null)?.type;
  const status = (error as { status?: unknown } | null)?.status;
  if (typeof status !== 'number' || status < 400 || status >= 500) return undefined;
  if (type === 'entity.too.large') {
    return new InvalidHttpRequest(`the request body is larger than ${FORM_BODY_LIMIT_BYTES} bytes`, { status: 413, cause: error });
  }
  if (type === 'encoding.unsupported') {
    return new InvalidHttpRequest('the Content-Encoding of the request body is not supported', { status: 415, cause: error });
  }
  // A path parameter that does not percent-decode (`/register/%E0%A4%A`): Express's URIError, with status 400.
  if (error instanceof URIError) return new InvalidRequest('the URL path is not valid percent-encoded UTF-8', { cause: error });
  return new InvalidRequest('the request body could not be read', { cause: error });
}

/**
 * Requests Node refuses before the app sees them get the Google error body instead of Node's empty one (the path is not
 * known yet, so /graphql's too). Long URLs are refused earlier by the app (414), so only oversized headers end up here
 * as 431. So do those Node would otherwise drop (CONNECT) or answer bare (an unmet Expect, 417).
 */
import type http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { Request, RequestHandler } from 'express';
import { RestInvalidArgument } from '../rest/errors.js';
import type { Logger } from '../logger.js';
import { continueOnFirstRead, onlyInterimWritten } from './expect-continue.js';

/** Longest request target the app accepts; Node's own limit on the whole head is 16 KiB. */
export const MAX_URL_LENGTH = 12 * 1024;

const STATUS: Record<string, [number, string, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'the request line and headers are too large', 'HEADERS_TOO_LARGE'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'Payload Too Large', 'the chunk extensions are too large', 'CHUNK_EXTENSIONS_TOO_LARGE'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'the request took too long to arrive', 'REQUEST_TIMEOUT'],
};

export const URL_TOO_LONG = `the URL is longer than ${MAX_URL_LENGTH} characters`;

/** Whether the request target is longer than the app accepts (414). */
export function isUrlTooLong(req: Request): boolean {
  return req.originalUrl.length > MAX_URL_LENGTH;
}

/**
 * 414 in the Google error shape, before any face parses the URL. The faces whose first path segment is in
 * `answeredByFace` (GraphQL: its clients read `errors`) check it themselves, in their protocol's shape.
 */
export function refuseLongUrl(answeredByFace: readonly string[] = []): RequestHandler {
  const segments = new Set(answeredByFace.map((path) => path.replace(/^\//, '').toLowerCase()));
  return function refuseLongUrl(req, _res, next) {
    if (!isUrlTooLong(req)) return next();
    if (segments.has(req.path.split('/')[1]!.toLowerCase())) return next();
    next(new RestInvalidArgument(URL_TOO_LONG, { httpStatus: 414, reason: 'URL_TOO_LONG' }));
  };
}

/** The Google error body of a refusal made before routing. */
function refusalBody(code: number, message: string, errorReason: string): string {
  return JSON.stringify(new RestInvalidArgument(message, { httpStatus: code, reason: errorReason }).toBody());
}

/** The access line of a refusal made before routing, naming no path or header (see answerClientError). */
function logRefusal(logger: Logger | undefined, code: number, errorReason: string): void {
  logger?.info({ req: { id: randomUUID() }, res: { statusCode: code }, refused: errorReason }, `refused before routing: ${code} ${errorReason}`);
}

/** Writes a Google error response straight on the socket and closes it; with a logger, writes the access line too. */
function refuseOnSocket(socket: Duplex, [code, reason, message, errorReason]: [number, string, string, string], logger?: Logger, headers = ''): void {
  const body = refusalBody(code, message, errorReason);
  socket.end(`HTTP/1.1 ${code} ${reason}\r\nConnection: close\r\n${headers}Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  logRefusal(logger, code, errorReason);
}

/**
 * Answers a request Node refused before the app saw it; with a logger, writes its access line too (the one the app
 * writes for every other request), naming no path or header: what was sent never got parsed, and may hold secrets.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex, logger?: Logger): void {
  const writable = socket.writable && onlyInterimWritten(socket);
  if (writable && error.code !== 'ECONNRESET') {
    refuseOnSocket(socket, STATUS[error.code ?? ''] ?? [400, 'Bad Request', 'the request is not valid HTTP', 'INVALID_HTTP'], logger);
    return;
  }
  socket.destroy(error);
}

/** CONNECT asks for a tunnel, which only a proxy opens: Node would drop the connection without a word. */
function refuseConnect(socket: Duplex, logger?: Logger): void {
  // RFC 9110 §10.2.1: an empty Allow says the target (an authority, no resource of ours) allows no method.
  refuseOnSocket(socket, [405, 'Method Not Allowed', 'the method CONNECT is not allowed: this server is no proxy', 'METHOD_NOT_ALLOWED'], logger, 'Allow: \r\n');
}

/** An Expect other than 100-continue (RFC 9110 §10.1.1): 417, which Node sends with an empty body. */
function refuseExpectation(req: http.IncomingMessage, res: http.ServerResponse, logger?: Logger): void {
  const body = refusalBody(417, 'the Expect header is not supported', 'EXPECTATION_FAILED');
  // The body that was meant to follow is never read: the connection cannot carry another request.
  res.writeHead(417, { Connection: 'close', 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
  req.resume();
  logRefusal(logger, 417, 'EXPECTATION_FAILED');
}

export function answerClientErrors(server: http.Server, logger?: Logger): void {
  server.on('clientError', (error: Error & { code?: string }, socket: Duplex) => answerClientError(error, socket, logger));
  server.on('connect', (_req: http.IncomingMessage, socket: Duplex) => refuseConnect(socket, logger));
  server.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => continueOnFirstRead(server, req, res));
  server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => refuseExpectation(req, res, logger));
}

/**
 * `Expect: 100-continue` (RFC 9110 §10.1.1): the client holds its body back until the server asks for it, and a server
 * may answer with a final status instead. Node asks at once; Fieldgate asks only when the app first reads the body, so
 * a request refused before that (its credentials, a body declared over the limit) is answered without the upload.
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import type { RequestHandler } from 'express';
import { isEncoded } from './content-coding.js';

/** Requests whose 100 Continue is still held back. */
const awaitingContinue = new WeakSet<http.IncomingMessage>();

/**
 * Bytes written on a socket when its last word was a 100 Continue: a final response may still follow one (RFC 9110
 * §15.2), so a body promised and never sent still gets its 408 rather than a silent close.
 */
const interimOnly = new WeakMap<Duplex, number>();

/** Whether everything written on `socket` so far is a 100 Continue, or nothing at all. */
export function onlyInterimWritten(socket: Duplex): boolean {
  const sent = (socket as Duplex & { bytesWritten?: number }).bytesWritten;
  return sent === 0 || sent === interimOnly.get(socket);
}

/**
 * Whether body bytes have arrived although no 100 Continue was sent: RFC 9110 §10.1.1 lets a client send its body
 * without waiting, and that client is then answered as one that sent no `Expect`.
 */
function bodyUnderWay(req: http.IncomingMessage): boolean {
  return req.readableLength > 0 || req.complete;
}

/** Whether the request announces content: chunked, or a Content-Length other than 0. */
function hasContent(req: http.IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && Number(length) !== 0);
}

/** Passes the request on with its 100 Continue held back until the body is first read. */
export function continueOnFirstRead(server: http.Server, req: http.IncomingMessage, res: http.ServerResponse): void {
  if (!hasContent(req)) {
    // Nothing to hold back (RFC 9110 §10.1.1 asks for no Expect without content): Node's own answer, connection kept.
    res.writeContinue();
    server.emit('request', req, res);
    return;
  }
  awaitingContinue.add(req);
  const writeHead = res.writeHead;
  res.writeHead = function writeHeadBeforeTheBody(this: http.ServerResponse, ...args: Parameters<typeof writeHead>) {
    if (awaitingContinue.delete(req) && !this.headersSent) {
      if (bodyUnderWay(req)) {
        // The client did not wait: as Node would have, 100 Continue goes first; the body is then read off after the
        // answer and the connection kept, and a request pipelined behind it is answered.
        this.writeContinue();
      } else {
        // The client waits, and may yet send the body or not: Node closes the connection after this answer, which
        // RFC 9110 §10.1.1 asks the server to say.
        this.setHeader('Connection', 'close');
        lingerBeforeClosing(req.socket);
      }
    }
    return writeHead.apply(this, args);
  } as typeof writeHead;
  // Every way of reading a Readable (data, readable, pipe, async iteration, resume) goes through _read.
  const read = req._read.bind(req);
  req._read = (size: number) => {
    if (awaitingContinue.delete(req) && !res.headersSent) {
      res.writeContinue();
      interimOnly.set(req.socket, req.socket.bytesWritten);
    }
    read(size);
  };
  server.emit('request', req, res);
}

/** How long a connection answered before its body may still take in what the client sends (RFC 9112 §9.6). */
const LINGER_MS = 2_000;

/**
 * RFC 9112 §9.6: closing with the client's upload still arriving (one that stopped waiting for 100 Continue just as
 * it was answered) resets the connection, and the reset can destroy the response before the client reads it. Node
 * closes at once (destroySoon); this half-closes instead, discards what still comes, and closes when the client does,
 * or after LINGER_MS.
 */
function lingerBeforeClosing(socket: Duplex): void {
  (socket as Duplex & { destroySoon(): void }).destroySoon = function lingeringClose(this: Duplex) {
    this.end();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    timer.unref();
    this.once('end', () => this.destroy());
    this.once('close', () => clearTimeout(timer));
  };
}

/** Whether the client still waits for a 100 Continue before sending the body (and so is not uploading it). */
export function awaitsContinue(req: http.IncomingMessage): boolean {
  return awaitingContinue.has(req) && !bodyUnderWay(req);
}

/**
 * `readBody` (a body-parser middleware with this `limit`), except that a body declared over the limit by a client
 * still waiting for 100 Continue is refused at once with body-parser's own 413, instead of being asked for and read
 * to the end first. A client already sending gets the 413 once its body is read: answering it mid-upload would reset
 * the connection under it (Node closes a connection whose request was not read to the end).
 */
export function refusingUnsentBodyOver(limit: number, readBody: RequestHandler): RequestHandler {
  return function readBodyWithinLimit(req, res, next) {
    const declared = Number(req.headers['content-length']);
    // A compressed body is held to the limit once inflated (body-parser), which its declared length does not tell.
    if (!(awaitsContinue(req) && declared > limit && !isEncoded(req.headers['content-encoding']))) return readBody(req, res, next);
    next(Object.assign(new Error('request entity too large'), { status: 413, statusCode: 413, expose: true, type: 'entity.too.large', length: declared, limit }));
  };
}

/**
 * A small HTTP/1.1 client over node:http for the reliability suites and the load script: it
 * sends exactly the bytes it is given (bodies as Buffers, so invalid UTF-8 goes out as is),
 * never follows redirects, and always reads the whole response, so a truncated body shows up
 * as an error instead of a silently shorter string. `rawExchange` goes one level lower, to a
 * TCP socket, for requests node:http refuses to build (bad header bytes, broken request lines).
 */
import http from 'node:http';
import net from 'node:net';

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The body bytes as received. */
  raw: Buffer;
}

export interface SendOptions {
  method?: string;
  headers?: Record<string, string | string[]>;
  body?: string | Buffer;
  agent?: http.Agent | false;
  /** Gives up (with an error) after this long; 30 s by default. */
  timeoutMs?: number;
  /** Send the body with Transfer-Encoding: chunked (no Content-Length), 64 KiB at a time. */
  chunked?: boolean;
}

/** A keep-alive agent for `maxSockets` concurrent requests. */
export function keepAliveAgent(maxSockets: number): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
}

export function send(url: string | URL, options: SendOptions = {}): Promise<Reply> {
  const target = typeof url === 'string' ? new URL(url) : url;
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | string[]> = { ...options.headers };
    if (options.body !== undefined && !options.chunked) headers['content-length'] = String(Buffer.byteLength(options.body));
    const req = http.request(
      {
        hostname: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: options.method ?? 'GET',
        headers,
        agent: options.agent ?? false,
        timeout: options.timeoutMs ?? 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('aborted', () => reject(new Error(`response to ${req.method} ${target.pathname} was cut off`)));
        res.on('end', () => {
          if (!res.complete) {
            reject(new Error(`response to ${req.method} ${target.pathname} ended before it was complete`));
            return;
          }
          const raw = Buffer.concat(chunks);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: raw.toString('utf8'), raw });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${req.method} ${target.pathname} timed out`)));
    req.on('error', reject);
    if (options.chunked && options.body !== undefined) {
      writeChunks(req, Buffer.from(options.body));
      return;
    }
    req.end(options.body);
  });
}

/** Writes `body` in 64 KiB chunks, respecting backpressure; stops quietly if the server hangs up. */
function writeChunks(req: http.ClientRequest, body: Buffer): void {
  let offset = 0;
  const next = () => {
    while (offset < body.length) {
      if (req.destroyed) return;
      const chunk = body.subarray(offset, offset + 65_536);
      offset += chunk.length;
      if (!req.write(chunk)) {
        req.once('drain', next);
        return;
      }
    }
    req.end();
  };
  next();
}

/** Form-urlencodes fields; undefined values are left out, arrays repeat the name. */
export function form(fields: Record<string, string | string[] | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) params.append(name, item);
  }
  return params.toString();
}

export function parseJson<T = unknown>(reply: Reply): T {
  try {
    return JSON.parse(reply.body) as T;
  } catch {
    throw new Error(`expected JSON, got ${reply.status} ${reply.headers['content-type'] ?? ''}: ${reply.body.slice(0, 300)}`);
  }
}

/**
 * Writes `bytes` to a fresh TCP connection and returns everything the server sends back until
 * it closes the connection (or `timeoutMs` passes, after which the socket is closed by us).
 */
export function rawExchange(port: number, bytes: Buffer | string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('connect', () => socket.write(bytes));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // A reset after the server answered and closed is still an answer.
      if (chunks.length && error.code === 'ECONNRESET') return;
      clearTimeout(timer);
      reject(error);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
  });
}

/** The status code of the first response in a raw HTTP/1.1 exchange. */
export function rawStatus(response: string): number {
  const match = /^HTTP\/1\.[01] (\d{3}) /.exec(response);
  if (!match) throw new Error(`not an HTTP response: ${JSON.stringify(response.slice(0, 200))}`);
  return Number(match[1]);
}

/** Resolves true when a new TCP connection to the port is refused, false when it is accepted. */
export function connectionRefused(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNREFUSED') resolve(true);
      else if (error.code === 'ECONNRESET') resolve(false);
      else reject(error);
    });
  });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a value other than undefined, or throws after `timeoutMs`. */
export async function eventually<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`${what}: not within ${timeoutMs} ms${lastError ? ` (last error: ${(lastError as Error).message})` : ''}`);
    }
    await sleep(intervalMs);
  }
}

/**
 * Sends a request head announcing `declaredLength` body bytes plus the first `prefix` of the
 * body, then waits for the answer without sending the rest: how a server answers a body it
 * can refuse from its Content-Length alone. The connection is dropped after the answer.
 */
export function announceBody(url: string | URL, options: { method: string; headers: Record<string, string>; declaredLength: number; prefix: string | Buffer; timeoutMs?: number }): Promise<Reply> {
  const target = typeof url === 'string' ? new URL(url) : url;
  return new Promise((resolve, reject) => {
    const req = http.request({
      hostname: target.hostname,
      port: target.port,
      path: `${target.pathname}${target.search}`,
      method: options.method,
      headers: { ...options.headers, 'content-length': String(options.declaredLength) },
      agent: false,
      timeout: options.timeoutMs ?? 30_000,
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: raw.toString('utf8'), raw });
        req.destroy();
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${options.method} ${target.pathname}: no answer to the announced body`)));
    req.on('error', reject);
    req.write(options.prefix);
  });
}

/**
 * The second client stack: undici (the HTTP client inside Node's fetch), keep-alive, one
 * request in flight per connection. A different parser, connection pool and timing than
 * node:http and autocannon, so a claim that holds on both does not depend on one client.
 */
import type http from 'node:http';
import { Agent } from 'undici';
import type { HttpResponse, RequestOptions, Sender } from './http.js';

export function createUndiciAgent(connections: number): Agent {
  return new Agent({ connections, pipelining: 1, keepAliveTimeout: 30_000 });
}

/** A sender through one undici Agent: plain data in, status, headers and text out. */
export function undiciSender(agent: Agent): Sender {
  return async (url: string | URL, options: RequestOptions = {}): Promise<HttpResponse> => {
    const target = typeof url === 'string' ? new URL(url) : url;
    const res = await agent.request({
      origin: target.origin,
      path: `${target.pathname}${target.search}`,
      method: (options.method ?? 'GET') as 'GET' | 'POST',
      headers: options.headers ?? {},
      ...(options.body === undefined ? {} : { body: options.body }),
      headersTimeout: options.timeoutMs ?? 30_000,
      bodyTimeout: options.timeoutMs ?? 30_000,
    });
    const body = await res.body.text();
    return { status: res.statusCode, headers: res.headers as http.IncomingHttpHeaders, body };
  };
}

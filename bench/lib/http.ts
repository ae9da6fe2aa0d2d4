/**
 * A small HTTP/1.1 client over node:http with keep-alive, used by the load process (flows,
 * refresh) and by the scripted logins. node:http keeps the load generator's own cost low and
 * identical for every server it drives.
 */
import http from 'node:http';

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  agent?: http.Agent;
  timeoutMs?: number;
}

/** How a client sends one request: node:http (below) or undici (bench/lib/undici.ts). */
export type Sender = (url: string | URL, options?: RequestOptions) => Promise<HttpResponse>;

/** A sender over node:http through one keep-alive agent (or the global agent). */
export function nodeSender(agent?: http.Agent): Sender {
  return (url, options = {}) => request(url, agent ? { ...options, agent } : options);
}

export function createAgent(maxSockets: number): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
}

export function request(url: string | URL, options: RequestOptions = {}): Promise<HttpResponse> {
  const target = typeof url === 'string' ? new URL(url) : url;
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
    const req = http.request(
      {
        protocol: target.protocol,
        hostname: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: options.method ?? 'GET',
        headers,
        agent: options.agent,
        timeout: options.timeoutMs ?? 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`request to ${target.pathname} timed out`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

export function formBody(fields: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) params.append(name, value);
  return params.toString();
}

/** RFC 6749 §2.3.1: each part is form-urlencoded before it is joined and base64-encoded. */
export function basicAuth(clientId: string, clientSecret: string): string {
  const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`;
}

/** A cookie jar good enough for one scripted browser on one host: names, values and paths. */
export class CookieJar {
  private readonly cookies = new Map<string, { value: string; path: string }>();

  store(setCookie: string[] | undefined, requestUrl: URL): void {
    for (const line of setCookie ?? []) {
      const [pair, ...attributes] = line.split(';');
      const eq = pair!.indexOf('=');
      if (eq <= 0) continue;
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      // RFC 6265 §5.1.4 default path: the request path up to its last slash.
      let path = requestUrl.pathname.slice(0, Math.max(1, requestUrl.pathname.lastIndexOf('/')));
      let expired = value === '';
      for (const attribute of attributes) {
        const [key = '', val = ''] = attribute.split('=').map((part) => part.trim());
        const lower = key.toLowerCase();
        if (lower === 'path' && val.startsWith('/')) path = val;
        if (lower === 'max-age' && Number(val) <= 0) expired = true;
        if (lower === 'expires' && Date.parse(val) < Date.now()) expired = true;
      }
      const key = `${name};${path}`;
      if (expired) this.cookies.delete(key);
      else this.cookies.set(key, { value, path });
    }
  }

  /** The Cookie header a browser would send to `url`. */
  header(url: URL): string {
    const pairs: string[] = [];
    for (const [key, { value, path }] of this.cookies) {
      const matches = url.pathname === path || url.pathname.startsWith(path.endsWith('/') ? path : `${path}/`);
      if (matches) pairs.push(`${key.slice(0, key.indexOf(';'))}=${value}`);
    }
    return pairs.join('; ');
  }
}

/**
 * The client side of Fieldgate's OAuth flows over real HTTP, for tests that drive running
 * `fieldgate serve` processes: a browser with a cookie jar that can send each step of a sign-in
 * to a different instance (as a load balancer would), the token endpoint calls, and an
 * authenticated REST read to check that an access token is accepted.
 *
 * The browser keeps one cookie jar for every instance, like a real browser talking to one
 * host name behind a load balancer; redirects to the ISSUER are replayed against whichever
 * instance `route` picks for that step.
 */
import { createHash, randomBytes } from 'node:crypto';
import type http from 'node:http';
import { form, parseJson, send, type Reply } from './http.js';

export interface FlowClient {
  id: string;
  /** Undefined for a public client. */
  secret: string | undefined;
  redirectUri: string;
}

export interface FlowUser {
  username: string;
  password: string;
}

export interface TokenSet {
  access_token: string;
  token_type: string;
  expires_in: number;
  refresh_token?: string;
  scope: string;
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** RFC 6749 §2.3.1: both halves form-urlencoded, then base64. */
export function basicAuthorization(clientId: string, secret: string): string {
  const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(secret)}`).toString('base64')}`;
}

export class CookieJar {
  private readonly cookies = new Map<string, string>();

  /** Takes the Set-Cookie headers of a response. */
  store(reply: Reply): void {
    for (const line of reply.headers['set-cookie'] ?? []) {
      const [pair, ...attributes] = line.split(';');
      const eq = pair!.indexOf('=');
      if (eq < 0) continue;
      const name = pair!.slice(0, eq).trim();
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a) || (/^\s*expires=/i.test(a) && Date.parse(a.split('=')[1]!) < Date.now()));
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, pair!.slice(eq + 1).trim());
    }
  }

  header(): string | undefined {
    if (this.cookies.size === 0) return undefined;
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  /** Every cookie value, for tests that look for secrets where they should not be. */
  values(): string[] {
    return [...this.cookies.values()];
  }
}

/** The value attributes of the inputs of the first form on a page, and its action. */
export function readForm(html: string): { action: string; fields: Record<string, string> } {
  const formMatch = /<form\b([^>]*)>([\s\S]*?)<\/form>/i.exec(html);
  if (!formMatch) throw new Error(`no form on the page: ${html.slice(0, 300)}`);
  const action = /\baction="([^"]*)"/i.exec(formMatch[1]!)?.[1];
  if (!action) throw new Error('the form has no action');
  const fields: Record<string, string> = {};
  for (const input of formMatch[2]!.matchAll(/<input\b([^>]*)>/gi)) {
    const name = /\bname="([^"]*)"/.exec(input[1]!)?.[1];
    const value = /\bvalue="([^"]*)"/.exec(input[1]!)?.[1] ?? '';
    if (name) fields[name] = unescapeHtml(value);
  }
  return { action: unescapeHtml(action), fields };
}

function unescapeHtml(value: string): string {
  return value
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&#x27;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** Path and query of a URL (absolute or not), to replay against any instance. */
export function pathOf(location: string): string {
  const url = new URL(location, 'http://placeholder');
  return url.pathname + url.search;
}

/** Chooses the base URL (`http://127.0.0.1:port`) each request of a flow goes to. */
export type Route = (step: number) => string;

export const always = (baseUrl: string): Route => () => baseUrl;
export const alternate = (...baseUrls: string[]): Route => (step) => baseUrls[step % baseUrls.length]!;

export class Browser {
  readonly jar = new CookieJar();
  private step = 0;
  /** Every response this browser received, newest last (for failure messages). */
  readonly history: { base: string; method: string; path: string; status: number }[] = [];

  constructor(
    private readonly route: Route,
    private readonly agent?: http.Agent,
    /** Sent with every request, e.g. the X-Forwarded-For a load balancer adds. */
    private readonly extraHeaders: Record<string, string> = {},
  ) {}

  private async exchange(method: 'GET' | 'POST', path: string, body?: string): Promise<Reply> {
    const base = this.route(this.step++);
    const headers: Record<string, string> = { ...this.extraHeaders };
    const cookie = this.jar.header();
    if (cookie) headers.cookie = cookie;
    if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    const reply = await send(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body }), agent: this.agent ?? false });
    this.jar.store(reply);
    this.history.push({ base, method, path: path.split('?')[0]!, status: reply.status });
    return reply;
  }

  get(path: string): Promise<Reply> {
    return this.exchange('GET', path);
  }

  post(path: string, fields: Record<string, string>): Promise<Reply> {
    return this.exchange('POST', path, form(fields));
  }

  /** Submits the first form of `page` with its hidden fields plus `extra`. */
  submit(page: Reply, extra: Record<string, string>): Promise<Reply> {
    const { action, fields } = readForm(page.body);
    return this.post(pathOf(action), { ...fields, ...extra });
  }
}

export interface AuthorizeOptions {
  client: FlowClient;
  user: FlowUser;
  scope?: string;
  /** Reuse a signed-in browser (its session and the consent it gave skip the pages). */
  browser?: Browser;
  route: Route;
  agent?: http.Agent;
}

export interface AuthorizationResult {
  code: string;
  verifier: string;
  state: string;
  /** The `iss` of the authorization response (RFC 9207). */
  iss: string | null;
  browser: Browser;
}

export function authorizePath(client: FlowClient, params: { scope?: string | undefined; state: string; challenge: string }): string {
  return `/authorize?${form({
    response_type: 'code',
    client_id: client.id,
    redirect_uri: client.redirectUri,
    scope: params.scope,
    state: params.state,
    code_challenge: params.challenge,
    code_challenge_method: 'S256',
  })}`;
}

/**
 * Runs `/authorize` → login page → consent page (Allow) → code, each request sent where
 * `route` says, and checks the redirect carries the same state.
 */
export async function authorize(options: AuthorizeOptions): Promise<AuthorizationResult> {
  const browser = options.browser ?? new Browser(options.route, options.agent);
  const { verifier, challenge } = pkcePair();
  const state = randomBytes(12).toString('base64url');
  let reply = await browser.get(authorizePath(options.client, { scope: options.scope, state, challenge }));
  for (let step = 0; step < 8; step++) {
    const location = reply.headers.location;
    if ((reply.status === 302 || reply.status === 303) && location?.startsWith(options.client.redirectUri)) {
      const params = new URL(location).searchParams;
      const code = params.get('code');
      if (!code) throw new Error(`the authorization ended without a code: ${location}`);
      if (params.get('state') !== state) throw new Error(`the state came back changed: ${location}`);
      return { code, verifier, state, iss: params.get('iss'), browser };
    }
    if (reply.status === 303 && location) {
      reply = await browser.get(pathOf(location));
    } else if (reply.status === 200 && reply.body.includes('name="password"')) {
      reply = await browser.submit(reply, { username: options.user.username, password: options.user.password });
    } else if (reply.status === 200 && reply.body.includes('name="decision"')) {
      reply = await browser.submit(reply, { decision: 'allow' });
    } else {
      throw new Error(`unexpected answer in the authorization flow: ${reply.status} ${location ?? ''} ${reply.body.slice(0, 300)}`);
    }
  }
  throw new Error(`the authorization flow did not finish: ${JSON.stringify(browser.history)}`);
}

/** POST /token with the client's credentials (Basic for a confidential client, client_id for a public one). */
export function tokenRequest(baseUrl: string, client: FlowClient, fields: Record<string, string | undefined>, agent?: http.Agent): Promise<Reply> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  const body: Record<string, string | undefined> = { ...fields };
  if (client.secret !== undefined) headers.authorization = basicAuthorization(client.id, client.secret);
  else body.client_id = client.id;
  return send(`${baseUrl}/token`, { method: 'POST', headers, body: form(body), agent: agent ?? false });
}

export function redeemCode(baseUrl: string, client: FlowClient, code: string, verifier: string, agent?: http.Agent): Promise<Reply> {
  return tokenRequest(baseUrl, client, { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier }, agent);
}

export function refreshRequest(baseUrl: string, client: FlowClient, refreshToken: string, agent?: http.Agent): Promise<Reply> {
  return tokenRequest(baseUrl, client, { grant_type: 'refresh_token', refresh_token: refreshToken }, agent);
}

/** The token set of a 200 answer; throws with the error otherwise. */
export function tokensOf(reply: Reply): TokenSet {
  if (reply.status !== 200) throw new Error(`token request failed: ${reply.status} ${reply.body}`);
  return parseJson<TokenSet>(reply);
}

/** Authorize at `route`, redeem at `redeemAt`: a fresh token set. */
export async function obtainTokens(options: AuthorizeOptions & { redeemAt?: string }): Promise<TokenSet & { browser: Browser }> {
  const result = await authorize(options);
  const tokens = tokensOf(await redeemCode(options.redeemAt ?? options.route(0), options.client, result.code, result.verifier, options.agent));
  return { ...tokens, browser: result.browser };
}

/** GET a cheap REST resource with the token: the status says whether the instance accepts it. */
export async function resourceStatus(baseUrl: string, accessToken: string): Promise<number> {
  const reply = await send(`${baseUrl}/products?fields=id&limit=1`, { headers: { authorization: `Bearer ${accessToken}` } });
  return reply.status;
}

/** The `kid` in a JWT's protected header. */
export function kidOf(jwt: string): string | undefined {
  const header = JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString('utf8')) as { kid?: string };
  return header.kid;
}

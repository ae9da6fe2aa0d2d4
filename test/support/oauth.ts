/**
 * Factories and a scripted browser for the OAuth specs. Everything runs against the real app
 * and database of a TestRuntime: clients and users are registered through the stores, codes
 * are obtained through the pages (or, for token-endpoint specs that are not about the pages,
 * issued through the code store directly).
 */
import { createHash, randomBytes } from 'node:crypto';
import request from 'supertest';
import type { Express } from 'express';
import type { Runtime } from '../../src/runtime.js';
import type { NewClient } from '../../src/oauth/stores/clients.js';
import { AuthorizationCodeStore, type NewAuthorizationCode } from '../../src/oauth/stores/codes.js';
import { ConsentStore } from '../../src/oauth/stores/consents.js';

let sequence = 0;
const unique = (prefix: string) => `${prefix}${++sequence}${randomBytes(3).toString('hex')}`;

export interface TestClient {
  id: string;
  secret: string | undefined;
  redirectUri: string;
  redirectUris: string[];
  name: string;
  isPublic: boolean;
}

export async function buildClient(runtime: Runtime, overrides: Partial<NewClient> = {}): Promise<TestClient> {
  const redirectUris = overrides.redirectUris ?? [`https://app-${unique('c')}.example/callback`];
  const registered = await runtime.clients.create({ name: overrides.name ?? `Test App ${unique('')}`, ...overrides, redirectUris });
  return {
    id: registered.client_id,
    secret: registered.client_secret,
    redirectUri: redirectUris[0]!,
    redirectUris,
    name: registered.client_name,
    isPublic: overrides.isPublic ?? false,
  };
}

export interface TestUser {
  id: number;
  username: string;
  password: string;
}

export async function buildUser(runtime: Runtime, overrides: Partial<Omit<TestUser, 'id'>> = {}): Promise<TestUser> {
  const username = overrides.username ?? unique('user');
  const password = overrides.password ?? `pw-${randomBytes(6).toString('hex')}`;
  const { id } = await runtime.users.create(username, password);
  return { id, username, password };
}

/** Two confidential clients, a public one and a user: the cast of the token-endpoint suites. */
export async function buildTokenCast(runtime: Runtime): Promise<{ client: TestClient; other: TestClient; publicClient: TestClient; user: TestUser }> {
  const [client, other, publicClient, user] = await Promise.all([
    buildClient(runtime),
    buildClient(runtime),
    buildClient(runtime, { isPublic: true }),
    buildUser(runtime),
  ]);
  return { client, other, publicClient, user };
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export function basic(clientId: string, secret: string): string {
  const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(secret)}`).toString('base64')}`;
}

/** The values of the hidden and visible inputs of the first form on a page. */
export function formFields(html: string): Record<string, string> {
  const form = /<form\b[^>]*>([\s\S]*?)<\/form>/i.exec(html)?.[1] ?? '';
  const fields: Record<string, string> = {};
  for (const match of form.matchAll(/<input\b([^>]*)>/gi)) {
    const name = /\bname="([^"]*)"/.exec(match[1]!)?.[1];
    const value = /\bvalue="([^"]*)"/.exec(match[1]!)?.[1] ?? '';
    if (name) fields[name] = unescapeHtml(value);
  }
  return fields;
}

/** The action and fields of the form on `html` whose action ends with `path` (a page may hold several forms). */
export function formFor(html: string, path: string): { action: string; fields: Record<string, string> } {
  const match = new RegExp(`<form method="post" action="([^"]*${path})"[^>]*>([\\s\\S]*?)</form>`).exec(html);
  if (!match) throw new Error(`no form for ${path}`);
  return { action: match[1]!, fields: formFields(`<form>${match[2]}</form>`) };
}

function unescapeHtml(value: string): string {
  return value
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** Path and query of an absolute Location, to replay against the in-process app. */
export function pathOf(location: string): string {
  const url = new URL(location);
  return url.pathname + url.search;
}

export interface AuthorizeParams {
  response_type?: string;
  client_id?: string;
  redirect_uri?: string;
  scope?: string;
  state?: string;
  code_challenge?: string;
  code_challenge_method?: string;
  [name: string]: string | undefined;
}

export function authorizePath(params: AuthorizeParams): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) search.append(name, value);
  return `/authorize?${search.toString()}`;
}

/** The usual parameters for `client`: code, its redirect URI, a state and a PKCE challenge. */
export function authorizeParams(client: TestClient, overrides: AuthorizeParams = {}): AuthorizeParams & { verifier: string } {
  const { verifier, challenge } = pkcePair();
  return {
    response_type: 'code',
    client_id: client.id,
    redirect_uri: client.redirectUri,
    state: randomBytes(8).toString('base64url'),
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...overrides,
    verifier,
  };
}

/**
 * A browser with a cookie jar, driving the login and consent pages through the app like a
 * person would. Each step returns the raw supertest response for assertions.
 */
export class Browser {
  readonly agent: ReturnType<typeof request.agent>;

  /** `target` is the in-process app, or the base URL of a running server. */
  constructor(target: Express | string) {
    this.agent = request.agent(target);
  }

  open(path: string) {
    return this.agent.get(path).redirects(0);
  }

  submit(action: string, fields: Record<string, string>) {
    return this.agent.post(pathOf(action)).type('form').send(fields).redirects(0);
  }

  /** Submits the login form shown in `page` with the given credentials. */
  async signIn(page: { text: string }, username: string, password: string) {
    const fields = formFields(page.text);
    return this.submit(formAction(page.text), { ...fields, username, password });
  }

  /** Presses Allow or Deny on the consent form shown in `page`. */
  async decide(page: { text: string }, decision: 'allow' | 'deny') {
    return this.submit(formAction(page.text), { ...formFields(page.text), decision });
  }

  /**
   * Runs the whole interactive flow for `params` as `user` (login and consent as needed,
   * pressing Allow) and returns the final redirect to the client.
   */
  async authorize(params: AuthorizeParams, user: TestUser, decision: 'allow' | 'deny' = 'allow') {
    let res = await this.open(authorizePath(params));
    for (let step = 0; step < 6; step++) {
      if (res.status === 302 || (res.status === 303 && !res.headers.location!.includes('/authorize'))) return res;
      if (res.status === 303) {
        res = await this.open(pathOf(res.headers.location!));
      } else if (res.status === 200 && res.text.includes('name="password"')) {
        res = await this.signIn(res, user.username, user.password);
      } else if (res.status === 200 && res.text.includes('name="decision"')) {
        res = await this.decide(res, decision);
      } else if (res.status === 200 && continueLink(res.text)?.includes('/authorize?')) {
        // The signed-out page of a session another account replaced: it loads front-channel frames, then goes on.
        res = await this.open(pathOf(continueLink(res.text)!));
      } else {
        throw new Error(`unexpected response ${res.status}: ${res.text.slice(0, 300)}`);
      }
    }
    throw new Error('the authorization flow did not finish');
  }
}

/** Where a page that moves on by itself (`<meta http-equiv="refresh">`) goes. */
export function continueLink(html: string): string | undefined {
  const url = /<meta http-equiv="refresh" content="\d+;url=([^"]*)">/.exec(html)?.[1];
  return url === undefined ? undefined : unescapeHtml(url);
}

export function formAction(html: string): string {
  const action = /<form\b[^>]*\baction="([^"]*)"/i.exec(html)?.[1];
  if (!action) throw new Error('no form on the page');
  return unescapeHtml(action);
}

/** The query parameters of a redirect to the client. */
export function redirectParams(res: { headers: Record<string, string | undefined> }): URLSearchParams {
  return new URL(res.headers.location!).searchParams;
}

/** The runtime's authorization code store, as the OAuth context builds it. */
export function codeStore(runtime: Runtime): AuthorizationCodeStore {
  return new AuthorizationCodeStore(runtime.db, runtime.config.authCodeTtl, runtime.authorizationCodeSecret, new ConsentStore(runtime.db));
}

/** Issues a code straight through the store (for token specs that are not about the pages). */
export async function issueCode(
  runtime: Runtime,
  client: TestClient,
  user: TestUser,
  overrides: Partial<NewAuthorizationCode> = {},
): Promise<{ code: string; grantId: string; verifier: string }> {
  const { verifier, challenge } = pkcePair();
  const store = codeStore(runtime);
  const input = {
    clientId: client.id,
    userId: user.id,
    scope: 'products:read orders:read',
    redirectUri: client.redirectUri,
    codeChallenge: challenge,
    codeChallengeMethod: 'S256' as const,
    ...overrides,
  };
  // As /authorize would: the user allowed the scopes, in a browser session still signed in when the code is redeemed.
  await new ConsentStore(runtime.db).grant(user.id, client.id, input.scope.split(' ').filter(Boolean));
  const account = await runtime.users.find(user.id);
  const issued = await store.issue(input, { epoch: account?.sessionEpoch ?? 0, sid: randomBytes(16).toString('base64url') });
  return { ...issued, verifier };
}

export function tokenRequest(app: Express, fields: Record<string, string | undefined>, client?: TestClient) {
  const body = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Record<string, string>;
  const req = request(app).post('/token').type('form');
  if (client?.secret) req.set('Authorization', basic(client.id, client.secret));
  else if (client) body.client_id ??= client.id;
  return req.send(body);
}

/** The whole code flow through the pages: `browser` signs `user` in and allows, then the code is redeemed at /token. */
export async function codeFlowTokens(app: Express, browser: Browser, client: TestClient, user: TestUser, overrides: AuthorizeParams = {}) {
  const params = authorizeParams(client, overrides);
  const res = await browser.authorize(params, user);
  return tokenRequest(app, { grant_type: 'authorization_code', code: redirectParams(res).get('code')!, redirect_uri: client.redirectUri, code_verifier: params.verifier }, client);
}

/** Redeems a fresh code (issued through the store) for tokens. */
export async function obtainTokens(
  app: Express,
  runtime: Runtime,
  client: TestClient,
  user: TestUser,
  overrides: Partial<NewAuthorizationCode> = {},
): Promise<{ access_token: string; refresh_token: string; scope: string; grantId: string }> {
  const { code, verifier, grantId } = await issueCode(runtime, client, user, overrides);
  const res = await tokenRequest(app, { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier }, client);
  if (res.status !== 200) throw new Error(`token request failed: ${res.status} ${res.text}`);
  return { ...(res.body as { access_token: string; refresh_token: string; scope: string }), grantId };
}

/** The security events logged so far, optionally only those named `event`. */
export function securityEvents(lines: string[], event?: string): Record<string, unknown>[] {
  return lines
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((record) => typeof record.event === 'string' && (event === undefined || record.event === event));
}

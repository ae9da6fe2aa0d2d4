/**
 * A scripted browser for the one interactive sign-in before measuring: follows redirects with
 * a cookie jar and submits whatever HTML form the server shows (login, then consent), the way
 * a person would — fill in the username and password, press the "allow" button — until the
 * server redirects to the client with a code. It knows no server's internals, so the same
 * script signs in to Fieldgate's pages and to oidc-provider's dev interactions.
 */
import { randomBytes } from 'node:crypto';
import { CookieJar, formBody, request } from './http.js';
import { authorizeUrl, codeFromRedirect, exchangeCode, FlowError, pkcePair, type OAuthTarget, type TokenResponse } from './oauth-client.js';

const MAX_STEPS = 12;

interface Control {
  tag: 'input' | 'button';
  name: string;
  value: string;
  type: string;
  text: string;
}

interface Form {
  action: string;
  method: string;
  controls: Control[];
}

function decodeEntities(value: string): string {
  return value
    .replace(/&#x([0-9a-f]+);/gi, (_, hex: string) => String.fromCodePoint(parseInt(hex, 16)))
    .replace(/&#(\d+);/g, (_, dec: string) => String.fromCodePoint(Number(dec)))
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function attributes(tag: string): Record<string, string> {
  const result: Record<string, string> = {};
  for (const match of tag.matchAll(/([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g)) {
    result[match[1]!.toLowerCase()] = decodeEntities(match[2] ?? match[3] ?? match[4] ?? '');
  }
  return result;
}

export function parseForms(html: string): Form[] {
  const forms: Form[] = [];
  for (const match of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    const attrs = attributes(match[1]!);
    const inner = match[2]!;
    const controls: Control[] = [];
    for (const control of inner.matchAll(/<input\b([^>]*)>|<button\b([^>]*)>([\s\S]*?)<\/button>/gi)) {
      const tag = control[1] !== undefined ? 'input' : 'button';
      const a = attributes(control[1] ?? control[2] ?? '');
      controls.push({
        tag,
        name: a.name ?? '',
        value: a.value ?? '',
        type: (a.type ?? (tag === 'button' ? 'submit' : 'text')).toLowerCase(),
        text: (control[3] ?? '').replace(/<[^>]*>/g, '').trim(),
      });
    }
    forms.push({ action: attrs.action ?? '', method: (attrs.method ?? 'get').toLowerCase(), controls });
  }
  return forms;
}

const ALLOW = /allow|approve|accept|authori[sz]e|continue|confirm|yes|sign.?in|log.?in/i;
const DENY = /deny|cancel|abort|reject|no\b/i;

/** The fields a person would send: hidden values, credentials, and the "allow" button. */
function fillForm(form: Form, username: string, password: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const control of form.controls) {
    if (!control.name || control.tag === 'button' || ['submit', 'button', 'image', 'reset'].includes(control.type)) continue;
    if (['checkbox', 'radio'].includes(control.type)) continue;
    if (control.type === 'password' || /pass/i.test(control.name)) fields[control.name] = password;
    else if (/^(username|login|user|email)$/i.test(control.name)) fields[control.name] = username;
    else fields[control.name] = control.value;
  }
  const submits = form.controls.filter((c) => (c.tag === 'button' || c.type === 'submit') && c.type === 'submit');
  const named = submits.filter((c) => c.name);
  const allow = named.find((c) => ALLOW.test(`${c.value} ${c.text}`) && !DENY.test(`${c.value} ${c.text}`));
  if (allow) fields[allow.name] = allow.value;
  return fields;
}

function pickForm(forms: Form[]): Form | undefined {
  const scored = forms.map((form) => {
    const text = form.controls.map((c) => `${c.name} ${c.value} ${c.text}`).join(' ');
    let score = 0;
    if (form.controls.some((c) => c.type === 'password')) score += 2;
    if (ALLOW.test(text)) score += 1;
    if (DENY.test(text) && !ALLOW.test(text)) score -= 2;
    return { form, score };
  });
  scored.sort((a, b) => b.score - a.score);
  return scored[0]?.form;
}

export interface SignInResult {
  cookie: string;
  tokens: TokenResponse;
  /** What the script went through, for the report and for debugging. */
  steps: string[];
}

/**
 * Signs in and consents once through the server's own pages, then redeems the resulting code.
 * Returns the session cookie that later /authorize requests reuse.
 */
export async function signInAndConsent(target: Omit<OAuthTarget, 'cookie'>, username: string, password: string): Promise<SignInResult> {
  const jar = new CookieJar();
  const steps: string[] = [];
  const { verifier, challenge } = pkcePair();
  const state = randomBytes(12).toString('base64url');
  let url = authorizeUrl({ ...target, cookie: '' }, state, challenge);
  let method = 'GET';
  let body: string | undefined;

  for (let step = 0; step < MAX_STEPS; step++) {
    const headers: Record<string, string> = { cookie: jar.header(url), accept: 'text/html' };
    if (body !== undefined) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      // A browser sends Origin on a form POST; Referer is left out (the pages ask for no-referrer).
      headers.origin = url.origin;
    }
    const res = await request(url, { method, headers, body });
    const setCookie = res.headers['set-cookie'];
    jar.store(Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : undefined, url);
    steps.push(`${method} ${url.pathname} → ${res.status}`);

    if (res.status >= 300 && res.status < 400 && res.headers.location) {
      const next = new URL(res.headers.location, url);
      if (next.href.startsWith(target.redirectUri)) {
        const code = codeFromRedirect(res, { ...target, cookie: '' }, state, url);
        const tokens = await exchangeCode({ ...target, cookie: '' }, code, verifier);
        return { cookie: jar.header(new URL(target.authorizePath, target.baseUrl)), tokens, steps };
      }
      // 303 (and 301/302 after a POST, as browsers do) turn into a GET; 307/308 keep the method.
      if (res.status !== 307 && res.status !== 308) {
        method = 'GET';
        body = undefined;
      }
      url = next;
      continue;
    }
    if (res.status === 200 && /<form\b/i.test(res.body)) {
      const form = pickForm(parseForms(res.body));
      if (!form) throw new FlowError(`no usable form on ${url.pathname}`);
      const action = new URL(form.action || url.href, url);
      const fields = fillForm(form, username, password);
      if (form.method === 'post') {
        method = 'POST';
        body = formBody(fields);
        url = action;
      } else {
        method = 'GET';
        body = undefined;
        action.search = formBody(fields);
        url = action;
      }
      continue;
    }
    const text = res.body.replace(/<style[\s\S]*?<\/style>/gi, '').replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim();
    throw new FlowError(`sign-in stopped at ${method} ${url.pathname} after ${steps.join(', ')}: HTTP ${res.status} ${text.slice(0, 500)}`);
  }
  throw new FlowError(`sign-in did not reach the redirect URI within ${MAX_STEPS} steps: ${steps.join(', ')}`);
}

/**
 * Front-Channel Logout 1.0: signing out renders one iframe per allowed client with a frontchannel_logout_uri, with `iss`
 * and the ID Tokens' `sid` when it registered frontchannel_logout_session_required; the CSP frames exactly those
 * origins; with a post_logout_redirect_uri the page moves on by itself after the frames.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { decodeJwt } from 'jose';
import { describeEachDatabase } from '../../support/runtime.js';
import {
  authorizeParams,
  authorizePath,
  Browser,
  buildClient,
  buildUser,
  codeFlowTokens,
  continueLink,
  formAction,
  formFields,
  pathOf,
  redirectParams,
  type TestClient,
  type TestUser,
} from '../../support/oauth.js';

describeEachDatabase('Front-Channel Logout', (context) => {
  let withSession: TestClient;
  let plain: TestClient;
  let notAllowed: TestClient;
  let user: TestUser;
  const afterLogout = 'https://fc.example/bye';

  beforeAll(async () => {
    const { runtime } = context();
    [withSession, plain, notAllowed, user] = await Promise.all([
      buildClient(runtime, {
        redirectUris: ['https://fc.example/cb'],
        oidc: { frontchannelLogoutUri: 'https://fc.example/logout?tenant=a', frontchannelLogoutSessionRequired: true, postLogoutRedirectUris: [afterLogout] },
      }),
      buildClient(runtime, { redirectUris: ['https://plain-fc.example:8443/cb'], oidc: { frontchannelLogoutUri: 'https://plain-fc.example:8443/fc' } }),
      buildClient(runtime, { redirectUris: ['https://never.example/cb'], oidc: { frontchannelLogoutUri: 'https://never.example/fc' } }),
      buildUser(runtime),
    ]);
  });

  async function idTokenOf(browser: Browser, client: TestClient, who = user): Promise<string> {
    const token = await codeFlowTokens(context().app, browser, client, who, { scope: 'openid' });
    return token.body.id_token as string;
  }

  async function signOut(browser: Browser, params: Record<string, string>) {
    const page = await browser.open(`/logout?${new URLSearchParams(params).toString()}`);
    return browser.submit(formAction(page.text), { ...formFields(page.text), decision: 'logout' });
  }

  const iframes = (page: string) => [...page.matchAll(/<iframe src="([^"]*)"/g)].map((match) => match[1]!.replace(/&amp;/g, '&'));

  it('renders the allowed clients’ iframes, with iss and sid only where required, and frames exactly their origins', async () => {
    const browser = new Browser(context().app);
    const sid = decodeJwt(await idTokenOf(browser, withSession)).sid;
    await idTokenOf(browser, plain);
    const page = await signOut(browser, { client_id: plain.id });
    expect(page.status).toBe(200);
    const frames = iframes(page.text);
    expect(frames).toHaveLength(2);
    const withIss = new URL(frames.find((src) => src.startsWith('https://fc.example/'))!);
    expect(withIss.pathname).toBe('/logout');
    expect(Object.fromEntries(withIss.searchParams)).toEqual({ tenant: 'a', iss: context().config.issuer, sid });
    expect(frames).toContain('https://plain-fc.example:8443/fc');
    const csp = page.headers['content-security-policy'] as string;
    const frameSrc = /(?:^|; )frame-src ([^;]*);/.exec(csp)?.[1]?.split(' ');
    expect(frameSrc?.sort()).toEqual(['https://fc.example', 'https://plain-fc.example:8443']);
    expect(csp).not.toContain('never.example');
    expect(csp).toContain("frame-ancestors 'none'");
  });

  it('loads the frames before going on to the post_logout_redirect_uri, with state', async () => {
    // A user who allowed only this client: one frame.
    const browser = new Browser(context().app);
    const idToken = await idTokenOf(browser, withSession, await buildUser(context().runtime));
    const page = await signOut(browser, { id_token_hint: idToken, post_logout_redirect_uri: afterLogout, state: 'a&b"<' });
    expect(page.status).toBe(200);
    expect(iframes(page.text)).toHaveLength(1);
    const target = `${afterLogout}?state=${encodeURIComponent('a&b"<')}`;
    expect(page.text).toContain(`<meta http-equiv="refresh" content="2;url=${target.replace(/&/g, '&amp;')}">`);
    expect(page.text).not.toContain('"<');
  });

  it('still answers 303 when no allowed client has a front-channel URI, and no frames when nobody was signed in', async () => {
    const { runtime, app } = context();
    // Someone else, who allowed only a client without a front-channel URI (never `notAllowed`).
    const other = await buildUser(runtime);
    const quiet = await buildClient(runtime, { redirectUris: ['https://quiet.example/cb'], oidc: { postLogoutRedirectUris: ['https://quiet.example/bye'] } });
    const browser = new Browser(app);
    await browser.authorize(authorizeParams(quiet, { scope: 'openid' }), other);
    const done = await signOut(browser, { client_id: quiet.id, post_logout_redirect_uri: 'https://quiet.example/bye' });
    expect(done.status).toBe(303);
    expect(done.headers.location).toMatch(/^https:\/\/quiet\.example\/bye\??$/);
    const anonymous = await request(app).get(`/logout?client_id=${notAllowed.id}`);
    expect(iframes(anonymous.text)).toEqual([]);
    expect(anonymous.headers['content-security-policy']).not.toContain('frame-src');
  });

  it('loads the ended session’s frames on “Switch account”, then goes on to the sign-in without prompt=login', async () => {
    const who = await buildUser(context().runtime);
    const browser = new Browser(context().app);
    const sid = decodeJwt(await idTokenOf(browser, withSession, who)).sid;
    const consent = await browser.open(authorizePath(authorizeParams(withSession, { scope: 'openid', prompt: 'consent login' })));
    // prompt=login first shows the sign-in page; signing in again as the same user leads to the consent page.
    const page = await browser.signIn(consent, who.username, who.password).then((res) => browser.open(pathOf(res.headers.location!)));
    expect(page.text).toContain('switch-account');
    const form = /<form method="post" action="([^"]*switch-account)"[^>]*>([\s\S]*?)<\/form>/.exec(page.text)!;
    const switched = await browser.submit(form[1]!.replace(/&amp;/g, '&'), formFields(`<form>${form[2]}</form>`));
    expect(switched.status).toBe(200);
    expect(switched.text).toContain('You are signed out');
    const [frame] = iframes(switched.text);
    expect(Object.fromEntries(new URL(frame!).searchParams)).toMatchObject({ iss: context().config.issuer, sid });
    expect(switched.headers['content-security-policy']).toMatch(/frame-src https:\/\/fc\.example;/);
    const next = new URL(continueLink(switched.text)!);
    expect(next.pathname).toBe('/authorize');
    expect(next.searchParams.get('prompt')).toBe('consent');
    expect((await browser.open(pathOf(next.href))).text).toContain('name="password"');
  });

  it('loads the previous account’s frames when another account signs in over its session, then finishes the flow', async () => {
    const [first, next] = await Promise.all([buildUser(context().runtime), buildUser(context().runtime)]);
    const browser = new Browser(context().app);
    const sid = decodeJwt(await idTokenOf(browser, withSession, first)).sid;
    const login = await browser.open(authorizePath(authorizeParams(withSession, { scope: 'openid', prompt: 'login' })));
    const page = await browser.signIn(login, next.username, next.password);
    expect(page.status).toBe(200);
    expect(page.text).toContain('The previous account is signed out');
    expect(iframes(page.text).map((src) => new URL(src).searchParams.get('sid'))).toEqual([sid]);
    // The same user signing in again ends nothing: straight on, no frames.
    const afterFlow = await browser.authorize(authorizeParams(withSession, { scope: 'openid' }), next);
    expect(redirectParams(afterFlow).get('code')).toBeTruthy();
    const again = await browser.signIn(await browser.open(authorizePath(authorizeParams(withSession, { scope: 'openid', prompt: 'login' }))), next.username, next.password);
    expect(again.status).toBe(303);
  });

  it('advertises front-channel logout with session support', async () => {
    const res = await request(context().app).get('/.well-known/openid-configuration');
    expect(res.body).toMatchObject({ frontchannel_logout_supported: true, frontchannel_logout_session_supported: true });
  });

  it('refuses a front-channel URI that is not https, has a fragment or credentials', async () => {
    const { runtime } = context();
    for (const uri of ['http://fc.example/x', 'https://fc.example/x#f', 'https://u:p@fc.example/x', 'javascript:alert(1)', 'not a uri']) {
      await expect(buildClient(runtime, { oidc: { frontchannelLogoutUri: uri } }), uri).rejects.toThrow(/front-channel logout URI/);
    }
  });
});

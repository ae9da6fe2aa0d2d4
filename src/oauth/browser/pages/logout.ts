/** RP-Initiated Logout's pages: "Sign out?" (a CSRF-protected POST) and "You are signed out". */
import { html, type SafeHtml } from '../../../http/html.js';
import { layout } from './layout.js';

export interface LogoutConfirmPage {
  username: string;
  clientName: string | undefined;
  csrfToken: string;
  issuer: string;
  /** The validated logout request, carried through the form. */
  fields: Record<string, string>;
}

export function logoutConfirmPage(page: LogoutConfirmPage): SafeHtml {
  return layout(
    'Sign out',
    html`<h1>Sign out?</h1>
<p>${page.clientName ? html`<strong>${page.clientName}</strong> asks to sign you out.` : 'Do you want to sign out?'} You are signed in as <strong>${page.username}</strong>.</p>
<form method="post" action="${page.issuer}/logout/confirm">
<input type="hidden" name="csrf_token" value="${page.csrfToken}">
${Object.entries(page.fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}
<div class="actions">
<button type="submit" name="decision" value="stay" class="secondary">Stay signed in</button>
<button type="submit" name="decision" value="logout">Sign out</button>
</div>
</form>`,
  );
}

export interface SignedOutExtras {
  /** Front-channel logout iframes (see oidc/frontchannel.ts). */
  frames?: readonly { src: string }[];
  /** Where to go once the frames had their moment (the validated post_logout_redirect_uri with state). */
  continueTo?: string;
  /** The link to `continueTo`; "Continue to the application" unless the next page is ours. */
  continueLabel?: string;
  /** The heading when not the signed-out user's own sign-out (another account signed in over theirs). */
  heading?: string;
}

/** Seconds the front-channel frames get before the browser moves on to the application. */
const FRAME_SECONDS = 2;

export function signedOutPage(signedOut: boolean, issuer: string, extras: SignedOutExtras = {}): SafeHtml {
  const frames = extras.frames ?? [];
  const heading = extras.heading ?? (signedOut ? 'You are signed out' : 'You are still signed in');
  return layout(
    extras.heading ?? (signedOut ? 'Signed out' : 'Still signed in'),
    html`<h1>${heading}</h1>
${frames.length ? html`<p class="muted">${extras.heading ? 'Signing it out of its applications too…' : 'Signing you out of your applications too…'}</p>
` : ''}${
      extras.continueTo ? html`<p><a href="${extras.continueTo}">${extras.continueLabel ?? 'Continue to the application'}</a></p>` : html`<p class="muted">You can close this page.</p>
<p><a href="${issuer}/account">Your account</a></p>`
    }
${frames.map((frame) => html`<iframe src="${frame.src}" title="Signing out" hidden></iframe>`)}`,
    extras.continueTo ? { refresh: { seconds: FRAME_SECONDS, url: extras.continueTo } } : {},
  );
}

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

export function signedOutPage(signedOut: boolean, issuer: string): SafeHtml {
  return layout(
    signedOut ? 'Signed out' : 'Still signed in',
    html`<h1>${signedOut ? 'You are signed out' : 'You are still signed in'}</h1>
<p class="muted">You can close this page.</p>
<p><a href="${issuer}/account">Your account</a></p>`,
  );
}

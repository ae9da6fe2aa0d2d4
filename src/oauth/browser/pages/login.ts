/** The sign-in page: username and password, for the client named at the top. */
import { html, type SafeHtml } from '../../../http/html.js';
import { layout } from './layout.js';

export interface LoginPage {
  clientName: string;
  action: string;
  csrfToken: string;
  /** The authorization request's query, carried through the form back to /authorize. */
  authorizationRequest: string;
  /** The name typed last time, shown again after a failure. */
  username?: string | undefined;
  error?: string | undefined;
}

export function loginPage(page: LoginPage): SafeHtml {
  return layout(
    'Sign in',
    html`<h1>Sign in</h1>
<p>Sign in to continue to <strong>${page.clientName}</strong></p>
${page.error ? html`<p class="alert" role="alert">${page.error}</p>` : ''}
<form method="post" action="${page.action}">
<input type="hidden" name="csrf_token" value="${page.csrfToken}">
<input type="hidden" name="authorization_request" value="${page.authorizationRequest}">
${signInFields(page.username)}
</form>
<p class="muted">${page.clientName} never sees your password.</p>`,
  );
}

export function signInFields(username: string | undefined): SafeHtml {
  return html`<label>Username
<input name="username" autocomplete="username" autocapitalize="none" spellcheck="false" required autofocus value="${username ?? ''}"></label>
<label>Password
<input name="password" type="password" autocomplete="current-password" required></label>
<div class="actions"><button type="submit">Sign in</button></div>`;
}

/** The account pages: connected apps (scopes in plain words, last use, Revoke), sign out everywhere, change password. */
import { html, type SafeHtml } from '../../../http/html.js';
import { describeScope, parseScope } from '../../scopes.js';
import type { ConnectedApp } from '../../stores/consents.js';
import { fieldState, formError, signInFields, signInTitle } from './login.js';
import { layout } from './layout.js';

export type AccountNotice = { kind: 'ok'; text: string } | { kind: 'error'; text: string; field: 'current_password' | 'new_password' };

export interface AccountPage {
  username: string;
  displayName: string | null;
  apps: readonly ConnectedApp[];
  csrfToken: string;
  /** The outcome of the last form; an error names the password field to fix. */
  notice?: AccountNotice | undefined;
  minPasswordLength: number;
  /** Base of the form actions (absolute, like the sign-in pages'). */
  issuer: string;
}

function when(date: Date | null): SafeHtml | string {
  if (!date) return 'Not used yet';
  const iso = date.toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}

function appItem(app: ConnectedApp, csrfToken: string, issuer: string): SafeHtml {
  const host = (() => {
    try {
      return new URL(app.redirectUris[0] ?? '').host;
    } catch {
      return '';
    }
  })();
  const headingId = `app-${app.clientId}`;
  return html`<li class="app" aria-labelledby="${headingId}">
<h3 id="${headingId}">${app.clientName}</h3>
${host ? html`<p class="muted">${host}</p>` : ''}
<ul class="scopes">${parseScope(app.scope).map((scope) => html`<li title="${scope}">${describeScope(scope)}</li>`)}</ul>
<p class="muted">Last used: ${when(app.lastUsedAt)}</p>
<form method="post" action="${issuer}/account/revoke">
<input type="hidden" name="csrf_token" value="${csrfToken}">
<input type="hidden" name="client_id" value="${app.clientId}">
<button type="submit" class="secondary" aria-label="Revoke access for ${app.clientName}">Revoke access</button>
</form>
</li>`;
}

/** A password field, tied to the error when it is the one to fix (and then focused). */
function passwordField(name: 'current_password' | 'new_password', error: AccountNotice | undefined): SafeHtml {
  const invalid = error?.kind === 'error' && error.field === name;
  return html` id="${name}" name="${name}"${fieldState(invalid, invalid, invalid)}`;
}

export function accountPage(page: AccountPage): SafeHtml {
  const error = page.notice?.kind === 'error' ? page.notice : undefined;
  return layout(
    error ? 'Password not changed' : 'Your account',
    html`<h1>Your account</h1>
<p>Signed in as <strong>${page.displayName ?? page.username}</strong>${page.displayName ? html` <span class="muted">(${page.username})</span>` : ''}</p>
${page.notice?.kind === 'ok' ? html`<p class="notice" role="status">${page.notice.text}</p>` : ''}
<section aria-labelledby="apps-heading">
<h2 id="apps-heading">Connected apps</h2>
${page.apps.length === 0 ? html`<p class="muted">You have not allowed any app to access your account.</p>` : html`<ul class="apps">${page.apps.map((app) => appItem(app, page.csrfToken, page.issuer))}</ul>`}
</section>
<section aria-labelledby="password-heading">
<h2 id="password-heading">Change password</h2>
${formError(error?.text)}
<form method="post" action="${page.issuer}/account/password">
<input type="hidden" name="csrf_token" value="${page.csrfToken}">
<input type="text" name="username" autocomplete="username" value="${page.username}" hidden readonly>
<label for="current_password">Current password
<input${passwordField('current_password', error)} type="password" autocomplete="current-password" required></label>
<label for="new_password">New password <span class="muted">(at least ${page.minPasswordLength} characters)</span>
<input${passwordField('new_password', error)} type="password" autocomplete="new-password" minlength="${page.minPasswordLength}" required></label>
<p class="muted">Changing your password signs you out everywhere else and ends every app's access.</p>
<div class="actions"><button type="submit">Change password</button></div>
</form>
</section>
<section aria-labelledby="sessions-heading">
<h2 id="sessions-heading">Sessions</h2>
<form method="post" action="${page.issuer}/account/sign-out-everywhere">
<input type="hidden" name="csrf_token" value="${page.csrfToken}">
<p class="muted">Signs out this browser and every other one. Apps you allowed keep their access until you revoke it.</p>
<div class="actions"><button type="submit" class="secondary">Sign out everywhere</button></div>
</form>
</section>`,
  );
}

export interface AccountLoginPage {
  csrfToken: string;
  issuer: string;
  username?: string | undefined;
  error?: string | undefined;
  /** The failed attempt's status (429: locked out). */
  status?: number | undefined;
}

export function accountLoginPage(page: AccountLoginPage): SafeHtml {
  return layout(
    signInTitle(page.error, page.status),
    html`<h1>Sign in to your account</h1>
${formError(page.error)}
<form method="post" action="${page.issuer}/account/login">
<input type="hidden" name="csrf_token" value="${page.csrfToken}">
${signInFields(page.username, page.error, page.status)}
</form>`,
  );
}

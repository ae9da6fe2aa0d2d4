/** The pages of /device (RFC 8628 §3.3): sign in, enter the device's code, allow or deny, and the answer. */
import { html, type SafeHtml } from '../../../http/html.js';
import { signInFields } from './login.js';
import { layout } from './layout.js';

export interface DeviceSignInPage {
  action: string;
  csrfToken: string;
  /** The code from verification_uri_complete, carried through sign-in. */
  userCode: string;
  username?: string | undefined;
  error?: string | undefined;
}

export function deviceSignInPage(page: DeviceSignInPage): SafeHtml {
  return layout(
    'Sign in',
    html`<h1>Sign in</h1>
<p>Sign in to connect a device to your account.</p>
${page.error ? html`<p class="alert" role="alert">${page.error}</p>` : ''}
<form method="post" action="${page.action}">
<input type="hidden" name="csrf_token" value="${page.csrfToken}">
<input type="hidden" name="user_code" value="${page.userCode}">
${signInFields(page.username)}
</form>`,
  );
}

export interface DeviceCodePage {
  action: string;
  csrfToken: string;
  username: string;
  userCode: string;
  error?: string | undefined;
}

export function deviceCodePage(page: DeviceCodePage): SafeHtml {
  return layout(
    'Connect a device',
    html`<h1>Connect a device</h1>
<p>Enter the code your device shows. Only enter a code you got from a device you are setting up yourself.</p>
${page.error ? html`<p class="alert" role="alert">${page.error}</p>` : ''}
<form method="post" action="${page.action}">
<input type="hidden" name="csrf_token" value="${page.csrfToken}">
<label>Code
<input name="user_code" autocomplete="off" autocapitalize="characters" spellcheck="false" required autofocus placeholder="XXXX-XXXX" value="${page.userCode}"></label>
<div class="actions"><button type="submit">Continue</button></div>
</form>
<p class="muted">Signed in as <strong>${page.username}</strong>.</p>`,
  );
}

export interface DeviceConsentPage {
  action: string;
  csrfToken: string;
  username: string;
  clientId: string;
  clientName: string;
  /** As shown on the device: XXXX-XXXX. */
  userCode: string;
  scopes: readonly { scope: string; description: string }[];
}

export function deviceConsentPage(page: DeviceConsentPage): SafeHtml {
  return layout(
    'Allow access',
    html`<h1>Allow ${page.clientName} on your device to access your account?</h1>
<p>Check that your device shows the code <strong><code>${page.userCode}</code></strong>.</p>
<p><strong>${page.clientName}</strong> would like to:</p>
<ul class="scopes">
${page.scopes.map(({ scope, description }) => html`<li title="${scope}">${description}</li>\n`)}
</ul>
<p class="muted">Signed in as <strong>${page.username}</strong>.</p>
<form method="post" action="${page.action}">
<input type="hidden" name="csrf_token" value="${page.csrfToken}">
<input type="hidden" name="user_code" value="${page.userCode}">
<input type="hidden" name="client_id" value="${page.clientId}">
<div class="actions">
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
<button type="submit" name="decision" value="allow">Allow</button>
</div>
</form>`,
  );
}

export function deviceDonePage(outcome: 'approved' | 'denied', clientName: string): SafeHtml {
  return outcome === 'approved'
    ? layout('Device connected', html`<h1>Device connected</h1>
<p><strong>${clientName}</strong> can now use your account. Go back to your device; it continues by itself.</p>`)
    : layout('Access denied', html`<h1>Access denied</h1>
<p><strong>${clientName}</strong> was not given access. You can close this page.</p>`);
}

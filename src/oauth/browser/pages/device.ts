/** The pages of /device (RFC 8628 §3.3): sign in, enter the device's code, allow or deny, and the answer. */
import { html, type SafeHtml } from '../../../http/html.js';
import { fieldState, formError, signInFields, signInTitle } from './login.js';
import { layout } from './layout.js';

export interface DeviceSignInPage {
  action: string;
  csrfToken: string;
  /** The code from verification_uri_complete, carried through sign-in. */
  userCode: string;
  username?: string | undefined;
  error?: string | undefined;
  /** The failed attempt's status (429: locked out). */
  status?: number | undefined;
}

export function deviceSignInPage(page: DeviceSignInPage): SafeHtml {
  return layout(
    signInTitle(page.error, page.status),
    html`<h1>Sign in</h1>
<p>Sign in to connect a device to your account.</p>
${formError(page.error)}
<form method="post" action="${page.action}">
<input type="hidden" name="csrf_token" value="${page.csrfToken}">
<input type="hidden" name="user_code" value="${page.userCode}">
${signInFields(page.username, page.error, page.status)}
</form>`,
  );
}

export interface DeviceCodePage {
  action: string;
  csrfToken: string;
  username: string;
  userCode: string;
  error?: string | undefined;
  /** The failed attempt's status (429: too many codes tried). */
  status?: number | undefined;
}

/**
 * The code field: a one-time code to the browser and password managers, capital letters on phone keyboards, no
 * spell-check; after a wrong code it is marked invalid and tied to the message (a lock-out marks it not).
 */
export function deviceCodePage(page: DeviceCodePage): SafeHtml {
  const failed = page.error !== undefined;
  const invalid = failed && page.status !== 429;
  return layout(
    !failed ? 'Connect a device' : page.status === 429 ? 'Too many codes tried' : 'Code not accepted',
    html`<h1>Connect a device</h1>
<p>Enter the code your device shows. Only enter a code you got from a device you are setting up yourself.</p>
${formError(page.error)}
<form method="post" action="${page.action}">
<input type="hidden" name="csrf_token" value="${page.csrfToken}">
<label for="user_code">Code
<input id="user_code" name="user_code" autocomplete="one-time-code" inputmode="text" autocapitalize="characters" spellcheck="false" required${fieldState(failed, invalid, true)} placeholder="XXXX-XXXX" value="${page.userCode}"></label>
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

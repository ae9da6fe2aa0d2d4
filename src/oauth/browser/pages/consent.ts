/** The consent page: who asks, for what (in plain words), and where the answer goes. */
import { html, type SafeHtml } from '../../../http/html.js';
import { layout } from './layout.js';

export interface ConsentPage {
  clientName: string;
  username: string;
  scopes: readonly { scope: string; description: string }[];
  /** Origin of the redirect URI, shown so the user can tell where they will be sent. */
  redirectOrigin: string;
  /** Set for a self-registered client: its name is its own claim, so the page names the host it is known by. */
  unverifiedHost?: string;
  action: string;
  csrfToken: string;
  authorizationRequest: string;
  /** Where "Not you? Switch account" posts (signs out, then shows the login page). */
  switchAccountAction: string;
  accountUrl: string;
  policyUri?: string | null | undefined;
  tosUri?: string | null | undefined;
}

export function consentPage(page: ConsentPage): SafeHtml {
  return layout(
    'Allow access',
    html`<h1>Allow ${page.clientName} to access your account?</h1>
${page.unverifiedHost === undefined ? html`` : html`<p class="warning"><strong>Unverified application.</strong> This application registered itself; its name is not checked. It is known by <code>${page.unverifiedHost}</code>. Allow only if you trust that site.</p>
`}<p><strong>${page.clientName}</strong> would like to:</p>
<ul class="scopes">
${page.scopes.map(({ scope, description }) => html`<li title="${scope}">${description}</li>\n`)}
</ul>
${page.policyUri || page.tosUri ? html`<p class="links-row">${page.policyUri ? html`<a href="${page.policyUri}" rel="noopener noreferrer" target="_blank">${page.clientName} privacy policy</a>` : ''}${page.tosUri ? html`<a href="${page.tosUri}" rel="noopener noreferrer" target="_blank">${page.clientName} terms of service</a>` : ''}</p>` : ''}
<p class="muted">You will be sent back to <code>${page.redirectOrigin}</code>. You can withdraw access at any time on <a href="${page.accountUrl}">your account page</a>.</p>
<form method="post" action="${page.action}">
<input type="hidden" name="csrf_token" value="${page.csrfToken}">
<input type="hidden" name="authorization_request" value="${page.authorizationRequest}">
<div class="actions">
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
<button type="submit" name="decision" value="allow">Allow</button>
</div>
</form>
<form method="post" action="${page.switchAccountAction}" class="muted">
<input type="hidden" name="csrf_token" value="${page.csrfToken}">
<input type="hidden" name="authorization_request" value="${page.authorizationRequest}">
<p>Signed in as <strong>${page.username}</strong>. Not you? <button type="submit" class="link">Switch account</button></p>
</form>`,
  );
}

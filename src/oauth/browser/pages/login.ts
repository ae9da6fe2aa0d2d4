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
  /** The failed attempt's status (429: locked out), which names the failure in the title. */
  status?: number | undefined;
}

/** The id of a form's error message, which the fields it concerns point to with aria-describedby. */
export const FORM_ERROR_ID = 'form-error';

/** The title of a sign-in page after a failure says what failed (WCAG 2.4.2, 3.3.1). */
export function signInTitle(error: string | undefined, status: number | undefined): string {
  if (!error) return 'Sign in';
  return status === 429 ? 'Too many attempts' : 'Sign-in failed';
}

/** A form's error, announced when the page loads (role=alert) and pointed to by its fields. */
export function formError(error: string | undefined): SafeHtml | string {
  return error ? html`<p class="alert" role="alert" id="${FORM_ERROR_ID}">${error}</p>` : '';
}

export function loginPage(page: LoginPage): SafeHtml {
  return layout(
    signInTitle(page.error, page.status),
    html`<h1>Sign in</h1>
<p>Sign in to continue to <strong>${page.clientName}</strong></p>
${formError(page.error)}
<form method="post" action="${page.action}">
<input type="hidden" name="csrf_token" value="${page.csrfToken}">
<input type="hidden" name="authorization_request" value="${page.authorizationRequest}">
${signInFields(page.username, page.error, page.status)}
</form>
<p class="muted">${page.clientName} never sees your password.</p>`,
  );
}

/** How a field after a failure is marked: invalid or not, tied to the error message, and focused if it is the first to fix. */
export function fieldState(failed: boolean, invalid: boolean, focus: boolean): SafeHtml {
  return html`${failed ? html` aria-describedby="${FORM_ERROR_ID}"` : ''}${invalid ? html` aria-invalid="true"` : ''}${focus ? html` autofocus` : ''}`;
}

/**
 * Username and password, named and typed for password managers (`autocomplete` username / current-password), sent with
 * Enter. After a failure the fields to fix are marked invalid and tied to the message, and the first of them has the
 * focus: the password (never sent back) once a username is there, else the username. A lock-out marks no field.
 */
export function signInFields(username: string | undefined, error: string | undefined, status: number | undefined): SafeHtml {
  const failed = error !== undefined;
  const locked = status === 429;
  const usernameInvalid = failed && !locked && (!username || status === 401);
  const passwordInvalid = failed && !locked;
  const focusUsername = !username;
  return html`<label for="username">Username
<input id="username" name="username" autocomplete="username" autocapitalize="none" spellcheck="false" required${fieldState(failed, usernameInvalid, focusUsername)} value="${username ?? ''}"></label>
<label for="password">Password
<input id="password" name="password" type="password" autocomplete="current-password" required${fieldState(failed, passwordInvalid, !focusUsername)}></label>
<div class="actions"><button type="submit">Sign in</button></div>`;
}

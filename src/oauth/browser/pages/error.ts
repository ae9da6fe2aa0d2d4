/**
 * The error page of the browser-facing endpoints, for the errors that must not be sent to a
 * redirect URI (unknown client, unregistered redirect URI: RFC 6749 §4.1.2.1) and for forms
 * that fail their CSRF check.
 */
import { html, type SafeHtml } from '../../../http/html.js';
import { layout } from './layout.js';

export function errorPage(title: string, message: string): SafeHtml {
  return layout(
    title,
    html`<h1>${title}</h1>
<p class="alert" role="alert">${message}</p>
<p class="muted">If you followed a link from an application, tell its developers. You can close this page.</p>`,
  );
}

/** A browser-facing failure answered with the error page and its own status (e.g. 403 for CSRF). */
export class PageError extends Error {
  override readonly name = 'PageError';
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The error page of the browser-facing endpoints, for errors that must not go to a redirect URI (unknown client,
 * unregistered redirect URI: RFC 6749 §4.1.2.1) and for forms that fail their CSRF check.
 */
import type { Request, Response } from 'express';
import { html, type SafeHtml } from '../../../http/html.js';
import type { Logger } from '../../../logger.js';
import { OAuthError } from '../../errors.js';
import { bodyReadError } from '../../params.js';
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable, isStatementTimeout } from '../../../db/errors.js';
import { layout, sendPage, type SendPageOptions } from './layout.js';
import { allowHeader } from '../../json-response.js';

export function errorPage(title: string, message: string): SafeHtml {
  return layout(
    title,
    html`<h1>${title}</h1>
<p class="alert" role="alert">${message}</p>
<p class="muted">If you followed a link from an application, tell its developers. You can close this page.</p>`,
  );
}

/**
 * A self-registered client's request refused (see AuthorizationError.confirmBeforeRedirect): the reason, the host it
 * would return to, and a link there that carries the error response — the user, not the server, decides to go.
 */
export function untrustedErrorPage(description: string, location: string): SafeHtml {
  const url = new URL(location);
  const host = url.host || url.protocol;
  return layout(
    'This request does not work',
    html`<h1>This request does not work</h1>
<p class="alert" role="alert">${description}</p>
<p>The application that sent you here is at <strong>${host}</strong>. Fieldgate has not verified it.</p>
<p><a href="${location}">Return to ${host}</a></p>
<p class="muted">If you do not know this application, close this page.</p>`,
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

/** The one way every browser-facing page answers a failure; anything unexpected is logged and becomes a 500 page. */
export function sendErrorPage(error: unknown, req: Request, res: Response, logger: Logger, failure: string, options: Pick<SendPageOptions, 'keepsOpener'> = {}): void {
  if (error instanceof PageError) {
    sendPage(res, errorPage(error.title, error.message), { ...options, status: error.status });
    return;
  }
  const requestError = error instanceof OAuthError && error.expose ? error : bodyReadError(error);
  if (requestError) {
    sendPage(res, errorPage('The form could not be read', requestError.description), { ...options, status: requestError.status });
    return;
  }
  if (isDatabaseUnavailable(error) || isStatementTimeout(error)) {
    logger.warn({ err: error, reqId: req.id }, `${failure}: the database is unavailable`);
    res.setHeader('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
    sendPage(res, errorPage('Try again in a moment', 'The service is unavailable for a moment. Please reload this page shortly.'), { ...options, status: 503 });
    return;
  }
  logger.error({ err: error, reqId: req.id }, failure);
  sendPage(res, errorPage('Something went wrong', 'The server could not complete the request. Please try again later.'), { ...options, status: 500 });
}

export function pageMethodNotAllowed(allowed: string) {
  const methods = allowHeader(allowed);
  return function rejectMethod(_req: Request, res: Response): void {
    res.setHeader('Allow', methods);
    sendPage(res, errorPage('Not allowed', `This address only answers ${methods}.`), { status: 405 });
  };
}

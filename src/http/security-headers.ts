/** Credential pages are never cached, framed or leaked in a Referer; CSP allows only their hashed styles and forms. */
import type { Response } from 'express';

export interface PageSecurityOptions {
  styleHashes?: readonly string[];
  /** Origins (or a native app's scheme) a form may end up at: browsers apply `form-action` to the redirects after a submission too. */
  formActionOrigins?: readonly string[];
  selfScripts?: boolean;
  imageOrigins?: readonly string[];
  /** Origins the page may load in iframes (front-channel logout); none otherwise. */
  frameOrigins?: readonly string[];
  /**
   * A relying party may open the page in a popup and wait for the popup to return to it (oidc-client-ts `signinPopup`,
   * MSAL `loginPopup`): `Cross-Origin-Opener-Policy: same-origin` would cut the popup from its opener for good.
   */
  keepsOpener?: boolean;
}

/** Only plain scheme://host[:port] values may reach the header (no `;` or `,` injection). */
const ORIGIN = /^https?:\/\/[A-Za-z0-9.\-[\]:]+$/;
/** A native app's private-use scheme (`com.example.app:`), which has no origin: CSP names it as a scheme source. */
const SCHEME_SOURCE = /^[a-z][a-z0-9+.-]*:$/;
/** Schemes that would let a form run or hold content rather than reach an app. */
const NEVER_FORM_TARGETS = new Set(['javascript:', 'data:', 'blob:', 'filesystem:', 'http:', 'https:']);

const isFormTarget = (source: string) => ORIGIN.test(source) || (SCHEME_SOURCE.test(source) && !NEVER_FORM_TARGETS.has(source));

export function setPageSecurityHeaders(res: Response, options: PageSecurityOptions = {}): void {
  const styles = options.styleHashes?.length ? options.styleHashes.map((hash) => `'${hash}'`).join(' ') : "'none'";
  const formActions = ["'self'", ...(options.formActionOrigins ?? []).filter(isFormTarget)];
  const images = (options.imageOrigins ?? []).filter((origin) => ORIGIN.test(origin));
  const frames = [...new Set((options.frameOrigins ?? []).filter((origin) => ORIGIN.test(origin)))];
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader(
    'Content-Security-Policy',
    `default-src 'none'; ${options.selfScripts ? "script-src 'self'; " : ''}style-src ${styles}; ${images.length ? `img-src ${images.join(' ')}; ` : ''}${frames.length ? `frame-src ${frames.join(' ')}; ` : ''}form-action ${formActions.join(' ')}; frame-ancestors 'none'; base-uri 'none'`,
  );
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Cross-Origin-Opener-Policy', options.keepsOpener ? 'unsafe-none' : 'same-origin');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
}

/** The front door's tools: no CDN, no inline script; the bundles set inline styles and GraphiQL starts blob: workers. */
export function setToolPageSecurityHeaders(res: Response): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader(
    'Content-Security-Policy',
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  );
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Content-Type-Options', 'nosniff');
}

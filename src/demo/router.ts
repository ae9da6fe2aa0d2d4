/**
 * Demo-mode pages. /demo/callback is the demo client's redirect URI: it shows the received
 * `code` and `state` (or the error) and a ready-to-paste curl command for the token endpoint.
 */
import express from 'express';
import type { Runtime } from '../runtime.js';
import { html } from '../http/html.js';
import { DEMO_CLIENT_ID, demoRedirectUri } from './seed.js';
import { demoVerifiers } from './authorize-link.js';

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** The first path segment of the demo's pages. */
export const DEMO_PATHS = ['/demo'];

export function createDemoRouter(runtime: Runtime): express.Router {
  const router = express.Router();
  router.get('/demo/callback', (req, res) => {
    const param = (name: string) => (typeof req.query[name] === 'string' ? (req.query[name] as string) : undefined);
    const code = param('code');
    const state = param('state');
    const error = param('error');
    const tokenUrl = `${runtime.config.issuer}/token`;
    const verifier = state ? demoVerifiers.get(state) : undefined;
    const curl = code
      ? [
          `curl -s -u ${shellQuote(`${DEMO_CLIENT_ID}:$CLIENT_SECRET`).replace(/^'|'$/g, '"')} ${shellQuote(tokenUrl)}`,
          `  -d grant_type=authorization_code`,
          `  --data-urlencode ${shellQuote(`code=${code}`)}`,
          `  --data-urlencode ${shellQuote(`redirect_uri=${demoRedirectUri(runtime.config.issuer)}`)}`,
          ...(verifier ? [`  -d code_verifier=${verifier}`] : []),
        ].join(' \\\n')
      : '';
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
    res.type('html').send(
      html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Fieldgate demo callback</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}pre{background:#f4f4f4;padding:1rem;overflow-x:auto;white-space:pre-wrap;word-break:break-all}</style></head>
<body><h1>Demo callback</h1>
${
  error
    ? html`<p>The authorization server answered with an error.</p>
<dl><dt>error</dt><dd id="error">${error}</dd><dt>error_description</dt><dd>${param('error_description') ?? ''}</dd><dt>state</dt><dd id="state">${state ?? ''}</dd></dl>`
    : html`<dl><dt>code</dt><dd id="code"><code>${code ?? '(none)'}</code></dd><dt>state</dt><dd id="state"><code>${state ?? '(none)'}</code></dd></dl>
<p>Exchange the code for tokens within ${runtime.config.authCodeTtl} seconds (set <code>CLIENT_SECRET</code> to the demo client secret printed at start-up):</p>
<pre id="curl">${curl}</pre>`
}
</body></html>`.value,
    );
  });
  return router;
}

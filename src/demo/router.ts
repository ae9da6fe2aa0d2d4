/** /demo/callback, the demo client's redirect URI, shows the code and a ready-to-paste curl command for /token. */
import express from 'express';
import type { Runtime } from '../runtime.js';
import { html } from '../http/html.js';
import { layout, sendPage } from '../oauth/browser/pages/layout.js';
import { DEMO_CLIENT_ID, demoRedirectUri } from './seed.js';
import { demoVerifiers } from './authorize-link.js';

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

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
    // The Copy buttons say "Copied" when done: a status message, announced politely (WCAG 4.1.3).
    const copyButton = (id: string) => html`<button type="button" class="copy secondary" data-copy="${id}" aria-live="polite">Copy</button>`;
    const copyable = (id: string, value: string) => html`<div class="copyable"><code id="${id}">${value}</code>${copyButton(id)}</div>`;
    const body = error
      ? html`<h1>Demo callback</h1>
<p class="alert" role="alert">The authorization server answered with an error.</p>
<dl><dt>error</dt><dd id="error">${error}</dd><dt>error_description</dt><dd>${param('error_description') ?? ''}</dd><dt>state</dt><dd id="state">${state ?? ''}</dd></dl>`
      : html`<h1>Demo callback</h1>
<dl><dt>code</dt><dd>${code ? copyable('code', code) : html`<code id="code">(none)</code>`}</dd><dt>state</dt><dd><code id="state">${state ?? '(none)'}</code></dd></dl>
<p>Exchange the code for tokens within ${runtime.config.authCodeTtl} seconds (set <code>CLIENT_SECRET</code> to the demo client secret printed at start-up):</p>
<div class="copyable"><pre id="curl">${curl}</pre>${copyButton('curl')}</div>
<p class="muted">Then use the <code>access_token</code> in the <a href="/graphql">GraphQL IDE</a> or the <a href="/api-reference">API reference</a>.</p>`;
    sendPage(res, layout(error ? 'Authorization failed' : 'Demo callback', body, { wide: true, scripts: ['/assets/fieldgate/copy.js'] }), { selfScripts: true });
  });
  return router;
}

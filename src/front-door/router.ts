/** The front door for people with a browser: `/` and /api-reference (Swagger UI); GraphiQL is enabled in graphql/http.ts. */
import express from 'express';
import type { Runtime } from '../runtime.js';
import { html } from '../http/html.js';
import { setToolPageSecurityHeaders } from '../http/security-headers.js';
import { layout, sendPage } from '../oauth/browser/pages/layout.js';
import { demoAuthorizeLink } from '../demo/authorize-link.js';
import { ASSETS_PATH, assetsRouter } from './assets.js';

export const API_REFERENCE_PATH = '/api-reference';

function homePage(runtime: Runtime): express.RequestHandler {
  return (_req, res) => {
    const { demo, issuer } = runtime.config;
    sendPage(
      res,
      layout(
        'Welcome',
        html`<h1>Welcome</h1>
<p>An OAuth 2.0 authorization server with a GraphQL API and a REST layer over the same data.</p>
<ul class="links">
${demo ? html`<li><a id="sign-in" href="${demoAuthorizeLink(issuer)}">Sign in with the demo account</a> <span class="muted">(demo / demo), then exchange the code for a token</span></li>` : ''}
<li><a id="api-reference" href="${API_REFERENCE_PATH}">API reference</a> <span class="muted">(REST, from /openapi.json)</span></li>
<li><a id="graphiql" href="/graphql">GraphQL IDE</a> <span class="muted">(GraphiQL)</span></li>
<li><a id="account" href="/account">Your account</a> <span class="muted">(connected apps, sign out everywhere, password)</span></li>
</ul>
<p class="muted">Both tools take the access token from the sign-in as <code>Authorization: Bearer …</code>.
Metadata: <a href="/.well-known/oauth-authorization-server">/.well-known/oauth-authorization-server</a></p>`,
      ),
    );
  };
}

const apiReferencePage: express.RequestHandler = (_req, res) => {
  setToolPageSecurityHeaders(res);
  res.type('html').send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference · Fieldgate</title>
<link rel="stylesheet" href="${ASSETS_PATH}/swagger-ui/swagger-ui.css">
<link rel="stylesheet" href="${ASSETS_PATH}/fieldgate/api-reference.css">
</head><body>
<form id="token-form" class="token"><label for="token">Access token</label>
<input id="token" name="token" autocomplete="off" spellcheck="false" placeholder="paste the access token from the demo flow; sent as Authorization: Bearer …">
</form>
<div id="swagger-ui"></div>
<script src="${ASSETS_PATH}/swagger-ui/swagger-ui-bundle.js"></script>
<script src="${ASSETS_PATH}/fieldgate/api-reference.js"></script>
</body></html>`);
};

export function createFrontDoorRouter(runtime: Runtime): express.Router {
  const router = express.Router();
  router.get('/', homePage(runtime));
  router.get(API_REFERENCE_PATH, apiReferencePage);
  router.use(assetsRouter());
  return router;
}

/**
 * GraphiQL as yoga's `graphiql` option renders it, but from the installed package instead of unpkg: static markup,
 * options in a JSON block rather than a script, scripts served from this origin.
 */
import type { GraphiQLOptions } from 'graphql-yoga';
import { ASSETS_PATH } from './assets.js';

export const GRAPHIQL_OPTIONS: GraphiQLOptions = {
  title: 'Fieldgate GraphiQL',
  defaultQuery: '# Paste the access token from the demo flow into Headers below:\n# {"Authorization": "Bearer <access token>"}\n{\n  products(limit: 5) {\n    id\n    name\n    priceCents\n    currency\n  }\n}\n',
  headers: JSON.stringify({ Authorization: 'Bearer ' }, null, 2),
  shouldPersistHeaders: false,
  defaultEditorToolsVisibility: 'headers',
};

/** JSON that is safe inside a <script type="application/json"> element. */
function scriptSafeJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
}

export function renderGraphiQL(options: GraphiQLOptions = GRAPHIQL_OPTIONS): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Fieldgate GraphiQL</title>
<link rel="stylesheet" href="${ASSETS_PATH}/graphiql/graphiql.css">
</head><body style="margin:0">
<div id="root" style="height:100vh">Loading GraphiQL…</div>
<script type="application/json" id="graphiql-options">${scriptSafeJson({ ...GRAPHIQL_OPTIONS, ...options })}</script>
<script src="${ASSETS_PATH}/fieldgate/graphiql-workers.js"></script>
<script src="${ASSETS_PATH}/graphiql/yoga-graphiql.umd.js"></script>
<script src="${ASSETS_PATH}/fieldgate/graphiql-start.js"></script>
</body></html>`;
}

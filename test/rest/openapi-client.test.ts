/**
 * A client generated from GET /openapi.json (openapi-typescript) and driven by openapi-fetch
 * against a live server: the document describes conditional requests (RFC 9110 §13), the
 * Idempotency-Key header and the AIP-193 error details well enough for a typed client to use them.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import openapiTS, { astToString } from 'openapi-typescript';
import createClient from 'openapi-fetch';
import ts from 'typescript';
import { startTestServer, type RunningTestServer } from '../support/e2e-server.js';
import { issueTestToken } from '../support/tokens.js';
import { buildProduct } from '../support/factories.js';

let server: RunningTestServer;
let dir: string;

beforeAll(async () => {
  server = await startTestServer('pglite');
  dir = await mkdtemp(join(tmpdir(), 'fieldgate-openapi-'));
});

afterAll(async () => {
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A program written against the generated types: it must compile as strict TypeScript. */
const CLIENT = `
import createClient from 'openapi-fetch';
import type { paths } from './api.js';
export async function use(baseUrl: string, token: string, productId: number): Promise<string> {
  const api = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${token}\` } });
  const created = await api.POST('/orders', {
    params: { header: { 'Idempotency-Key': 'k' }, query: { fields: 'id,etag' } },
    body: { items: [{ productId, quantity: 1 }], memo: null },
  });
  if (!created.data) {
    const info = created.error.error.details.find((detail) => detail['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo');
    return info && 'reason' in info ? info.reason : 'unknown';
  }
  // Every field is optional: \`fields\` chooses which come back.
  const id: number | undefined = created.data.id;
  if (id === undefined) return 'no id';
  const patched = await api.PATCH('/orders/{id}', {
    params: { path: { id }, query: { update_mask: 'memo' }, header: { 'If-Match': created.response.headers.get('ETag') ?? '*' } },
    body: { memo: 'typed' },
  });
  const read = await api.GET('/orders/{id}', { params: { path: { id }, header: { 'If-None-Match': '"x"' } } });
  const list = await api.GET('/products', { params: { query: { fields: 'id,name' } } });
  return \`\${patched.data?.memo} \${read.data?.status} \${list.data?.length}\`;
}
`;

it('generates types that a strict openapi-fetch client compiles against, and that client works on the live server', async () => {
  const document = await (await fetch(`${server.baseUrl}/openapi.json`)).json();
  const types = astToString(await openapiTS(document));
  for (const name of ["'If-Match'", "'If-None-Match'", "'Idempotency-Key'", 'ErrorInfo', 'BadRequest', '304', '422']) {
    expect(types.replace(/"/g, "'")).toContain(name);
  }
  await writeFile(join(dir, 'api.ts'), types);
  await writeFile(join(dir, 'client.ts'), CLIENT);
  const program = ts.createProgram([join(dir, 'client.ts')], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    // Resolve openapi-fetch from this project.
    baseUrl: process.cwd(),
    paths: { 'openapi-fetch': [join(process.cwd(), 'node_modules/openapi-fetch')] },
    types: [],
  });
  const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  expect(diagnostics.join('\n')).toBe('');

  // The same calls, untyped here, against the live server.
  const { runtime } = server.context;
  const product = await buildProduct(runtime, { name: 'Typed', priceCents: 700 });
  const { token } = await issueTestToken(runtime);
  const api = createClient<any>({ baseUrl: server.baseUrl, headers: { Authorization: `Bearer ${token}` } }); // eslint-disable-line @typescript-eslint/no-explicit-any
  const key = randomUUID();
  const body = { items: [{ productId: product.id, quantity: 1 }], memo: null };
  const created = await api.POST('/orders', { params: { header: { 'Idempotency-Key': key }, query: { fields: 'id,etag,memo' } }, body });
  expect(created.response.status).toBe(201);
  const replayed = await api.POST('/orders', { params: { header: { 'Idempotency-Key': key }, query: { fields: 'id,etag,memo' } }, body });
  expect(replayed.response.headers.get('Idempotent-Replayed')).toBe('true');
  expect(replayed.data).toEqual(created.data);
  const id = created.data.id as number;

  const read = await api.GET('/orders/{id}', { params: { path: { id } } });
  const etag = read.response.headers.get('ETag')!;
  const notModified = await api.GET('/orders/{id}', { params: { path: { id }, header: { 'If-None-Match': etag } } });
  expect(notModified.response.status).toBe(304);

  const patched = await api.PATCH('/orders/{id}', { params: { path: { id }, query: { update_mask: 'memo' }, header: { 'If-Match': etag } }, body: { memo: 'typed' } });
  expect(patched.response.status).toBe(200);
  expect(patched.data.memo).toBe('typed');
  const stale = await api.PATCH('/orders/{id}', { params: { path: { id }, query: { update_mask: 'memo' } }, body: { memo: 'late', etag: created.data.etag } });
  expect(stale.response.status).toBe(409);
  expect(stale.error.error.details[0]).toMatchObject({ reason: 'ETAG_MISMATCH', domain: 'fieldgate.dev' });

  const list = await api.GET('/products', { params: { query: { fields: 'id,name', limit: 200 } } });
  expect(list.response.status).toBe(200);
  expect(list.data).toContainEqual({ id: product.id, name: 'Typed' });
  const conflict = await api.POST('/orders', { params: { header: { 'Idempotency-Key': key } }, body: { ...body, memo: 'other' } });
  expect(conflict.response.status).toBe(422);
});

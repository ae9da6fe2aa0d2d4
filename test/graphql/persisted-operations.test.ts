/**
 * Persisted operations on /graphql: Apollo's automatic persisted queries (APQ) by default, and
 * the trusted-documents allow-list when GRAPHQL_TRUSTED_DOCUMENTS names a manifest.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import fc from 'fast-check';
import { buildSchema } from 'graphql';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildProduct } from '../support/factories.js';
import type { GraphQLResponse } from '../support/graphql.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { PersistedOperations } from '../../src/graphql/persisted-operations.js';
import { GqlError } from '../../src/graphql/errors.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const apq = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });

type Body = { query?: string; extensions?: Record<string, unknown>; documentId?: string; variables?: Record<string, unknown> };

async function post(app: Parameters<typeof request>[0], authorization: string | undefined, body: Body): Promise<GraphQLResponse> {
  let req = request(app).post('/graphql').set('Content-Type', 'application/json').set('Accept', 'application/json');
  if (authorization) req = req.set('Authorization', authorization);
  const res = await req.send(JSON.stringify(body));
  return { status: res.status, headers: res.headers as Record<string, string>, body: res.body };
}

async function get(app: Parameters<typeof request>[0], authorization: string, params: Record<string, string>): Promise<GraphQLResponse> {
  const res = await request(app).get('/graphql').query(params).set('Accept', 'application/json').set('Authorization', authorization);
  return { status: res.status, headers: res.headers as Record<string, string>, body: res.body };
}

function expectRefusal(res: GraphQLResponse, status: number, code: string, reason?: string): void {
  expect(res.status).toBe(status);
  expect(res.body.data ?? undefined).toBeUndefined();
  expect(res.body.errors).toHaveLength(1);
  expect(res.body.errors![0]!.extensions).toEqual({ code, ...(reason && { reason }), http: { status } });
}

describeEachDatabase('automatic persisted queries on /graphql (Apollo APQ wire format)', (context) => {
  let me: TestToken;
  beforeAll(async () => {
    me = await issueTestToken(context().runtime, { scope: 'products:read' });
    await buildProduct(context().runtime, { name: 'Persisted Lantern' });
  });
  const app = () => context().app;

  it('answers an unknown hash with PERSISTED_QUERY_NOT_FOUND (404), the signal for the client to resend with the query', async () => {
    const res = await post(app(), me.authorization, { extensions: apq(sha256('{ __typename }-unknown')) });
    expectRefusal(res, 404, 'PERSISTED_QUERY_NOT_FOUND');
    expect(res.body.errors![0]!.message).toBe('PersistedQueryNotFound');
  });

  it('registers hash + query once the hash is verified, and then runs the hash alone', async () => {
    const query = 'query ApqProducts { products(limit: 5) { name } }';
    const hash = sha256(query);
    expectRefusal(await post(app(), me.authorization, { extensions: apq(hash) }), 404, 'PERSISTED_QUERY_NOT_FOUND');
    const registered = await post(app(), me.authorization, { query, extensions: apq(hash) });
    expect(registered.status).toBe(200);
    expect(registered.body.data?.products).toContainEqual({ name: 'Persisted Lantern' });
    const byHash = await post(app(), me.authorization, { extensions: apq(hash) });
    expect(byHash.status).toBe(200);
    expect(byHash.body).toEqual(registered.body);
    // The hash is case-insensitive hex, and `documentId` (GraphQL over HTTP) names the same document.
    expect((await post(app(), me.authorization, { extensions: apq(hash.toUpperCase()) })).body).toEqual(registered.body);
    expect((await post(app(), me.authorization, { documentId: `sha256:${hash}` })).body).toEqual(registered.body);
  });

  it('passes variables to a document run by hash', async () => {
    const query = 'query ApqLimit($limit: Int) { products(limit: $limit) { id } }';
    const hash = sha256(query);
    await post(app(), me.authorization, { query, extensions: apq(hash) });
    const res = await post(app(), me.authorization, { extensions: apq(hash), variables: { limit: 1 } });
    expect(res.status).toBe(200);
    expect(res.body.data?.products).toHaveLength(1);
  });

  it('refuses a query whose sha256 is not the hash, and registers nothing under that hash', async () => {
    const wrong = sha256('{ products { id } }');
    const res = await post(app(), me.authorization, { query: '{ products { name } }', extensions: apq(wrong) });
    expectRefusal(res, 400, 'INVALID_ARGUMENT', 'PERSISTED_QUERY_HASH_MISMATCH');
    expectRefusal(await post(app(), me.authorization, { extensions: apq(wrong) }), 404, 'PERSISTED_QUERY_NOT_FOUND');
  });

  it('refuses to register a document longer than the bound, which still runs when sent without a hash', async () => {
    const query = `{ __typename }${' '.repeat(40_000)}`;
    const res = await post(app(), me.authorization, { query, extensions: apq(sha256(query)) });
    expectRefusal(res, 400, 'INVALID_ARGUMENT', 'PERSISTED_QUERY_TOO_LARGE');
    expectRefusal(await post(app(), me.authorization, { extensions: apq(sha256(query)) }), 404, 'PERSISTED_QUERY_NOT_FOUND');
    const plain = await post(app(), me.authorization, { query });
    expect(plain.status).toBe(200);
    expect(plain.body).toEqual({ data: { __typename: 'Query' } });
  });

  it('refuses a malformed persistedQuery extension or documentId with INVALID_ARGUMENT', async () => {
    const hash = sha256('{ __typename }');
    expectRefusal(
      await post(app(), me.authorization, { extensions: { persistedQuery: { version: 2, sha256Hash: hash } } }),
      400,
      'INVALID_ARGUMENT',
      'PERSISTED_QUERY_VERSION_NOT_SUPPORTED',
    );
    for (const extensions of [{ persistedQuery: { version: 1, sha256Hash: 'abc' } }, { persistedQuery: { version: 1 } }, { persistedQuery: 'x' }, { persistedQuery: [1] }]) {
      expectRefusal(await post(app(), me.authorization, { extensions }), 400, 'INVALID_ARGUMENT', 'PERSISTED_QUERY_INVALID');
    }
    expectRefusal(await post(app(), me.authorization, { documentId: 'md5:abc' }), 400, 'INVALID_ARGUMENT', 'PERSISTED_QUERY_INVALID');
    expectRefusal(
      await post(app(), me.authorization, { documentId: sha256('a'), extensions: apq(sha256('b')) }),
      400,
      'INVALID_ARGUMENT',
      'PERSISTED_QUERY_INVALID',
    );
  });

  it('does not register a document for a request without a valid token', async () => {
    const query = 'query ApqAnonymous { __typename }';
    const hash = sha256(query);
    const anonymous = await post(app(), undefined, { query, extensions: apq(hash) });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.errors![0]!.extensions).toMatchObject({ code: 'UNAUTHENTICATED' });
    expectRefusal(await post(app(), me.authorization, { extensions: apq(hash) }), 404, 'PERSISTED_QUERY_NOT_FOUND');
  });

  it('works over GET (extensions as JSON in the URL, as Apollo clients send them), and still refuses a mutation there', async () => {
    const query = 'query ApqGet { products(limit: 1) { id } }';
    const hash = sha256(query);
    const extensions = JSON.stringify(apq(hash));
    expectRefusal(await get(app(), me.authorization, { extensions }), 404, 'PERSISTED_QUERY_NOT_FOUND');
    const registered = await get(app(), me.authorization, { query, extensions });
    expect(registered.status).toBe(200);
    const byHash = await get(app(), me.authorization, { extensions });
    expect(byHash.status).toBe(200);
    expect(byHash.body).toEqual(registered.body);
    expect((await get(app(), me.authorization, { documentId: `sha256:${hash}` })).body).toEqual(registered.body);

    const mutation = 'mutation ApqUpdate($input: UpdateOrderInput!) { updateOrder(id: 0, input: $input) { id } }';
    const mutationHash = sha256(mutation);
    await post(app(), me.authorization, { query: mutation, extensions: apq(mutationHash) });
    const overGet = await get(app(), me.authorization, { extensions: JSON.stringify(apq(mutationHash)), variables: '{"input":{}}' });
    expectRefusal(overGet, 405, 'INVALID_ARGUMENT', 'METHOD_NOT_ALLOWED');
  });

  it('answers any shape of persistedQuery, documentId and query with a GraphQL error or data, never a 5xx', async () => {
    const hex = fc.stringMatching(/^[0-9a-fA-F]{64}$/);
    const value = fc.oneof(fc.constant(undefined), fc.constant(null), fc.integer(), fc.string(), hex, fc.array(fc.integer(), { maxLength: 2 }), fc.dictionary(fc.string(), fc.string(), { maxKeys: 2 }));
    const persistedQuery = fc.oneof(value, fc.record({ version: fc.oneof(fc.constant(1), value), sha256Hash: fc.oneof(hex, value) }, { requiredKeys: [] }));
    await fc.assert(
      fc.asyncProperty(persistedQuery, fc.oneof(value, hex.map((h) => `sha256:${h}`)), fc.oneof(fc.constant(undefined), fc.constant('{ __typename }'), fc.string()), async (pq, documentId, query) => {
        const body = JSON.parse(JSON.stringify({ query, documentId, extensions: pq === undefined ? undefined : { persistedQuery: pq } })) as Body;
        const res = await post(app(), me.authorization, body);
        expect(res.status).toBeLessThan(500);
        expect(res.body.errors ?? res.body.data).toBeDefined();
        for (const error of res.body.errors ?? []) expect(error.extensions?.code).not.toBe('INTERNAL_SERVER_ERROR');
      }),
      { numRuns: 60 },
    );
  });

  it('serves concurrent registrations of one document and concurrent runs by hash alike', async () => {
    const query = 'query ApqConcurrent { products(limit: 2) { id } }';
    const hash = sha256(query);
    const registrations = await Promise.all(Array.from({ length: 8 }, () => post(app(), me.authorization, { query, extensions: apq(hash) })));
    expect(registrations.map((res) => res.status)).toEqual(Array(8).fill(200));
    const runs = await Promise.all(Array.from({ length: 8 }, () => post(app(), me.authorization, { extensions: apq(hash) })));
    for (const run of runs) expect(run.body).toEqual(registrations[0]!.body);
  });
});

// ---------------------------------------------------------------- trusted documents

const LISTED = 'query TrustedProducts { products(limit: 3) { name } }';
const LISTED_TYPENAME = '{ __typename }';
const manifestDir = mkdtempSync(path.join(tmpdir(), 'fieldgate-trusted-'));
const manifestPath = path.join(manifestDir, 'manifest.json');
writeFileSync(manifestPath, JSON.stringify({ [sha256(LISTED)]: LISTED, [sha256(LISTED_TYPENAME)]: LISTED_TYPENAME }));

describeEachDatabase(
  'trusted documents on /graphql (GRAPHQL_TRUSTED_DOCUMENTS)',
  (context) => {
    let me: TestToken;
    beforeAll(async () => {
      me = await issueTestToken(context().runtime, { scope: 'products:read' });
      await buildProduct(context().runtime, { name: 'Trusted Kettle' });
    });
    const app = () => context().app;

    it('runs a listed document named by its hash, by documentId, over GET, and sent as its exact text', async () => {
      const byHash = await post(app(), me.authorization, { extensions: apq(sha256(LISTED)) });
      expect(byHash.status).toBe(200);
      expect(byHash.body.data?.products).toContainEqual({ name: 'Trusted Kettle' });
      expect((await post(app(), me.authorization, { documentId: `sha256:${sha256(LISTED)}` })).body).toEqual(byHash.body);
      expect((await post(app(), me.authorization, { documentId: sha256(LISTED) })).body).toEqual(byHash.body);
      expect((await get(app(), me.authorization, { extensions: JSON.stringify(apq(sha256(LISTED))) })).body).toEqual(byHash.body);
      const byText = await post(app(), me.authorization, { query: LISTED });
      expect(byText.status).toBe(200);
      expect(byText.body).toEqual(byHash.body);
      expect((await post(app(), me.authorization, { query: LISTED, extensions: apq(sha256(LISTED)) })).body).toEqual(byHash.body);
      // application/graphql bodies are text too.
      const graphqlBody = await request(app())
        .post('/graphql')
        .set('Authorization', me.authorization)
        .set('Content-Type', 'application/graphql')
        .send(LISTED_TYPENAME);
      expect(graphqlBody.status).toBe(200);
      expect(graphqlBody.body).toEqual({ data: { __typename: 'Query' } });
    });

    it('refuses any other document text with PERSISTED_QUERY_ONLY (400), even one that differs only in spacing', async () => {
      expectRefusal(await post(app(), me.authorization, { query: '{ products { id } }' }), 400, 'PERSISTED_QUERY_ONLY');
      expectRefusal(await post(app(), me.authorization, { query: `${LISTED} ` }), 400, 'PERSISTED_QUERY_ONLY');
      expectRefusal(await get(app(), me.authorization, { query: '{ __typename  }' }), 400, 'PERSISTED_QUERY_ONLY');
    });

    it('refuses an unknown id with PERSISTED_QUERY_NOT_IN_LIST (404), and registers nothing sent with a query', async () => {
      const other = '{ products { id } }';
      expectRefusal(await post(app(), me.authorization, { extensions: apq(sha256(other)) }), 404, 'PERSISTED_QUERY_NOT_IN_LIST');
      expectRefusal(await post(app(), me.authorization, { query: other, extensions: apq(sha256(other)) }), 400, 'PERSISTED_QUERY_ONLY');
      expectRefusal(await post(app(), me.authorization, { extensions: apq(sha256(other)) }), 404, 'PERSISTED_QUERY_NOT_IN_LIST');
      expectRefusal(await post(app(), me.authorization, { documentId: `sha256:${sha256(other)}` }), 404, 'PERSISTED_QUERY_NOT_IN_LIST');
    });

    it('refuses a listed hash sent with another query (hash mismatch), so a listed id cannot carry an unlisted document', async () => {
      const res = await post(app(), me.authorization, { query: '{ products { id } }', extensions: apq(sha256(LISTED)) });
      expectRefusal(res, 400, 'INVALID_ARGUMENT', 'PERSISTED_QUERY_HASH_MISMATCH');
    });

    it('still authenticates before anything else', async () => {
      const res = await post(app(), undefined, { query: '{ products { id } }' });
      expect(res.status).toBe(401);
      expect(res.body.errors![0]!.extensions).toMatchObject({ code: 'UNAUTHENTICATED' });
    });

    it('leaves the REST layer working, since it builds its own documents', async () => {
      const res = await request(app()).get('/products?fields=name').set('Authorization', me.authorization);
      expect(res.status).toBe(200);
      expect(res.body).toContainEqual({ name: 'Trusted Kettle' });
    });
  },
  { GRAPHQL_TRUSTED_DOCUMENTS: manifestPath },
);

// ---------------------------------------------------------------- the manifest and the store, without a server

describe('GRAPHQL_TRUSTED_DOCUMENTS', () => {
  const write = (name: string, content: string) => {
    const file = path.join(manifestDir, name);
    writeFileSync(file, content);
    return file;
  };
  const refusal = (file: string) => {
    try {
      loadConfig({ GRAPHQL_TRUSTED_DOCUMENTS: file });
    } catch (error) {
      return error;
    }
    return undefined;
  };

  it('is off by default', () => {
    expect(loadConfig({}).graphqlTrustedDocuments).toBeUndefined();
  });

  it('reads a manifest of sha256 hex to document, keyed in lowercase', () => {
    const file = write('upper.json', JSON.stringify({ [sha256(LISTED).toUpperCase()]: LISTED }));
    expect(loadConfig({ GRAPHQL_TRUSTED_DOCUMENTS: file }).graphqlTrustedDocuments).toEqual(new Map([[sha256(LISTED), LISTED]]));
  });

  it("reads Apollo's persisted query manifest format too", () => {
    const apollo = { format: 'apollo-persisted-query-manifest', version: 1, operations: [{ id: sha256(LISTED), name: 'TrustedProducts', type: 'query', body: LISTED }] };
    const file = write('apollo.json', JSON.stringify(apollo));
    expect(loadConfig({ GRAPHQL_TRUSTED_DOCUMENTS: file }).graphqlTrustedDocuments).toEqual(new Map([[sha256(LISTED), LISTED]]));
    const wrongId = write('apollo-wrong.json', JSON.stringify({ ...apollo, operations: [{ ...apollo.operations[0], id: sha256('x') }] }));
    expect(() => loadConfig({ GRAPHQL_TRUSTED_DOCUMENTS: wrongId })).toThrow(/^GRAPHQL_TRUSTED_DOCUMENTS: .*whose sha256 is not/);
    const noOperations = write('apollo-empty.json', JSON.stringify({ format: 'apollo-persisted-query-manifest', version: 2 }));
    expect(() => loadConfig({ GRAPHQL_TRUSTED_DOCUMENTS: noOperations })).toThrow(/^GRAPHQL_TRUSTED_DOCUMENTS: the Apollo manifest .* must have version 1/);
  });

  it.each([
    ['a missing file', path.join(manifestDir, 'absent.json'), /cannot be read \(ENOENT\)/],
    ['invalid JSON', 'bad-json.json', /is not valid JSON/],
    ['an array', 'array.json', /must be a JSON object/],
    ['a key that is not a sha256', 'bad-key.json', /is not a sha256 hex hash/],
    ['a non-string document', 'non-string.json', /to something other than a document/],
    ['a document whose hash is not its key', 'mismatch.json', /whose sha256 is not/],
    ['no document', 'empty.json', /lists no document/],
  ])('refuses %s with a ConfigError naming the variable', (_what, name, message) => {
    const contents: Record<string, string> = {
      'bad-json.json': '{"a":',
      'array.json': JSON.stringify([LISTED]),
      'bad-key.json': JSON.stringify({ 'not-a-hash': LISTED }),
      'non-string.json': JSON.stringify({ [sha256(LISTED)]: { query: LISTED } }),
      'mismatch.json': JSON.stringify({ [sha256(LISTED)]: `${LISTED} ` }),
      'empty.json': '{}',
    };
    const file = contents[name] === undefined ? name : write(name, contents[name]);
    const error = refusal(file);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe('GRAPHQL_TRUSTED_DOCUMENTS');
    expect((error as ConfigError).message).toMatch(/^GRAPHQL_TRUSTED_DOCUMENTS: /);
    expect((error as ConfigError).message).toMatch(message);
  });

  it('refuses, at start-up, a listed document that does not validate against the schema', () => {
    const schema = buildSchema('type Query { a: Int }');
    const good = '{ a }';
    expect(() => new PersistedOperations({ schema, trustedDocuments: new Map([[sha256(good), good]]) })).not.toThrow();
    for (const bad of ['{ b }', '{ a']) {
      const create = () => new PersistedOperations({ schema, trustedDocuments: new Map([[sha256(bad), bad]]) });
      expect(create).toThrow(ConfigError);
      expect(create).toThrow(/^GRAPHQL_TRUSTED_DOCUMENTS: the document [0-9a-f]{64} is not valid/);
    }
  });
});

describe('the APQ store', () => {
  const schema = buildSchema('type Query { a: Int }');
  const codeOf = (run: () => unknown) => {
    try {
      run();
    } catch (error) {
      return error instanceof GqlError ? error.code : 'not a GqlError';
    }
    return undefined;
  };

  it('keeps at most its bound of documents, forgetting the least recently used', () => {
    const store = new PersistedOperations({ schema, maxDocuments: 2 });
    const docs = ['{ a }', '{ b: a }', '{ c: a }'];
    for (const query of docs.slice(0, 2)) store.resolve({ query, extensions: apq(sha256(query)) });
    expect(store.resolve({ extensions: apq(sha256(docs[0]!)) })).toBe(docs[0]); // now the most recent
    store.resolve({ query: docs[2], extensions: apq(sha256(docs[2]!)) });
    expect(codeOf(() => store.resolve({ extensions: apq(sha256(docs[1]!)) }))).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect(store.resolve({ extensions: apq(sha256(docs[0]!)) })).toBe(docs[0]);
    expect(store.resolve({ extensions: apq(sha256(docs[2]!)) })).toBe(docs[2]);
  });

  it('bounds the length of a registered document', () => {
    const store = new PersistedOperations({ schema, maxQueryLength: 10 });
    const short = '{ a }';
    const long = '{ a }      ';
    expect(store.resolve({ query: short, extensions: apq(sha256(short)) })).toBe(short);
    expect(codeOf(() => store.resolve({ query: long, extensions: apq(sha256(long)) }))).toBe('INVALID_ARGUMENT');
  });

  it('passes a request without an id through untouched', () => {
    const store = new PersistedOperations({ schema });
    expect(store.resolve({ query: '{ a }' })).toBe('{ a }');
    expect(store.resolve({})).toBeUndefined();
  });
});

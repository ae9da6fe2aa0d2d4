/**
 * POST/GET /graphql: graphql-yoga handles the HTTP side — request parsing, batching (off),
 * body size, CORS, content negotiation, turning `extensions.http` into the status line and
 * headers — and hands each request's parameters to the shared Executor after checking the
 * bearer token, so HTTP clients and the REST layer go through the very same pipeline.
 */
import express from 'express';
import type { IncomingMessage } from 'node:http';
import type { ExecutionResult } from 'graphql';
import { createYoga, type GraphQLParams, type Plugin, type YogaLogger } from 'graphql-yoga';
import type { Runtime } from '../runtime.js';
import { authenticateRequest, withResourceMetadata } from '../tokens/bearer.js';
import { InvalidToken } from '../oauth/errors.js';
import { rejectRequest, GqlError, GqlUnauthenticated, type RequestRejection } from './errors.js';
import { GRAPHIQL_OPTIONS, renderGraphiQL } from '../front-door/graphiql.js';
import { setToolPageSecurityHeaders } from '../http/security-headers.js';
import type { Executor } from './executor.js';
import { readJsonBody } from './json-body.js';
import { answerPlainPost } from './plain-post.js';
import { namesPersistedDocument, PersistedOperations, type PersistedRequest } from './persisted-operations.js';

export const GRAPHQL_PATH = '/graphql';
/** Documents are at most a few thousand tokens; variables of one order fit easily. */
const MAX_REQUEST_BODY_BYTES = 256 * 1024;

/**
 * Yoga turns `extensions.http` into the status line and headers, then strips it from the body.
 * A client reading only the body should still see why the whole request failed, so the status
 * is put back (`extensions.http.status`) through the result's own `stringify`, which yoga uses
 * on the stripped result.
 */
function withHttpStatusInBody(result: ExecutionResult): ExecutionResult & { stringify?: (value: unknown) => string } {
  const statuses = result.errors?.map((error) => (error.extensions?.http as { status?: number } | undefined)?.status);
  if (!statuses?.some((status) => status !== undefined)) return result;
  return {
    ...result,
    stringify(sanitized: unknown) {
      const body = sanitized as { errors?: { toJSON?: () => Record<string, unknown> }[] };
      const errors = body.errors?.map((error, i) => {
        const json = (typeof error.toJSON === 'function' ? error.toJSON() : error) as { extensions?: Record<string, unknown> };
        const status = statuses[i];
        return status === undefined ? json : { ...json, extensions: { ...json.extensions, http: { status } } };
      });
      return JSON.stringify({ ...(sanitized as object), ...(errors && { errors }) });
    },
  };
}

/**
 * RFC 9728 §5.1: every bearer challenge of this face (401 from the token check, 403 from a
 * resolver's scope check) names the GraphQL resource's metadata. The headers object belongs to
 * its one error, so it is completed in place.
 */
function withResourceMetadataChallenge(result: ExecutionResult, metadataUrl: string): ExecutionResult {
  for (const error of result.errors ?? []) {
    const headers = (error.extensions?.http as { headers?: Record<string, string> } | undefined)?.headers;
    const challenge = headers?.['WWW-Authenticate'];
    if (headers && challenge) headers['WWW-Authenticate'] = withResourceMetadata(challenge, metadataUrl);
  }
  return result;
}

/** The request's parameters as persisted operations read them; GET carries `documentId` in the URL. */
function persistedRequest(params: GraphQLParams & { documentId?: unknown }, request: Request): PersistedRequest {
  const documentId = params.documentId ?? (request.method === 'GET' ? new URL(request.url).searchParams.get('documentId') ?? undefined : undefined);
  return { query: params.query, extensions: params.extensions, documentId };
}

/**
 * Replaces yoga's parse/validate/execute with the Executor, behind bearer authentication. The
 * document a persisted request names is looked up (and, for APQ, registered) only once its
 * token is accepted, so anonymous clients cannot fill the store.
 */
function useExecutor(runtime: Runtime, executor: Executor, persisted: PersistedOperations): Plugin {
  const resource = runtime.resources.graphql;
  return {
    onParams({ params, request, setParams, setParamsHandler, setResult, context }) {
      const computed = (context as { req?: IncomingMessage }).req?.graphqlResult;
      if (computed) return setResult(withHttpStatusInBody(withResourceMetadataChallenge(computed, resource.metadataUrl)));
      // Yoga's parameter check (after this hook) wants a query; a request that names its
      // document by id has none yet, so it passes with an empty one until the handler resolves it.
      if (params.query == null && namesPersistedDocument(persistedRequest(params, request))) setParams({ ...params, query: '' });
      setParamsHandler(async ({ request, params }) => {
        let principal;
        try {
          const url = new URL(request.url);
          principal = await authenticateRequest(runtime, {
            authorization: request.headers.get('authorization'),
            dpop: request.headers.get('dpop') ?? undefined,
            method: request.method,
            path: url.pathname + url.search,
            resource: resource.identifier,
          });
        } catch (error) {
          if (error instanceof InvalidToken) {
            return withHttpStatusInBody(withResourceMetadataChallenge({ errors: [GqlUnauthenticated.fromInvalidToken(error)] }, resource.metadataUrl));
          }
          throw error;
        }
        let source: string | undefined;
        try {
          source = persisted.resolve(persistedRequest(params, request));
        } catch (error) {
          if (error instanceof GqlError) return withHttpStatusInBody({ errors: [error] });
          throw error;
        }
        return withHttpStatusInBody(
          withResourceMetadataChallenge(await executor.run({
            principal,
            source,
            variables: params.variables,
            operationName: params.operationName,
            method: request.method,
          }), resource.metadataUrl),
        );
      });
    },
  };
}

/**
 * Yoga reads the `variables` and `extensions` of a GET's query string and of a form POST with a
 * bare `JSON.parse`, and answers its SyntaxError as a 500: they are the client's to fix.
 */
const useParameterJsonErrors: Plugin = {
  onRequestParse({ requestParser, setRequestParser }) {
    if (!requestParser) return;
    setRequestParser(async (request) => {
      try {
        return await requestParser(request);
      } catch (error) {
        if (error instanceof SyntaxError) throw rejectRequest('BAD_USER_INPUT', 'the variables and extensions parameters must be JSON');
        throw error;
      }
    });
  },
};

/** The POST body types yoga parses (multipart is off). */
const ACCEPTED_POST_TYPES = ['application/json', 'application/graphql-response+json', 'application/graphql', 'application/x-www-form-urlencoded'];

function refuse(res: express.Response, status: number, reason: RequestRejection, message: string): void {
  const error = rejectRequest(reason, message);
  res.status(status).type('application/json').send(JSON.stringify({ errors: [{ message: error.message, extensions: { code: error.code, reason } }] }));
}

/** Yoga answers other content types with a bare 415; clients get a GraphQL error instead. */
const refuseUnsupportedMediaType: express.RequestHandler = (req, res, next) => {
  if (req.method !== 'POST') return next();
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (ACCEPTED_POST_TYPES.includes(type)) return next();
  req.resume();
  refuse(res, 415, 'UNSUPPORTED_MEDIA_TYPE', `POST /graphql takes a body of type application/json (got ${type || 'none'})`);
};

/**
 * Refuses a body declared larger than the limit at once, with a GraphQL error, so a client that
 * announced a huge body is answered without sending it. The rest is read and discarded while the
 * answer goes out (bounded by the server's requestTimeout); Node still closes the connection
 * afterwards, so a client that keeps uploading may see a reset.
 */
const refuseOversizedBody: express.RequestHandler = (req, res, next) => {
  const length = Number(req.headers['content-length'] ?? 0);
  if (!(length > MAX_REQUEST_BODY_BYTES)) return next();
  req.resume();
  refuseTooLarge(res);
};

/** One answer for a body over the limit, declared (above) or found while inflating it (below). */
function refuseTooLarge(res: express.Response): void {
  refuse(res, 413, 'BODY_TOO_LARGE', `the request body is larger than ${MAX_REQUEST_BODY_BYTES} bytes`);
}

/**
 * The one answer to a body `readJsonBody` could not read (body-parser's errors: corrupt
 * compressed data, an unsupported Content-Encoding, an inflated body over the limit), as a
 * GraphQL error; anything else goes on to the app's last-resort handler.
 */
const refuseUnreadableBody: express.ErrorRequestHandler = (error: unknown, _req, res, next) => {
  const { status, type } = (error ?? {}) as { status?: unknown; type?: unknown };
  if (res.headersSent || typeof status !== 'number' || status < 400 || status >= 500) return next(error);
  if (type === 'entity.too.large') return refuseTooLarge(res);
  if (type === 'encoding.unsupported') return refuse(res, 415, 'UNSUPPORTED_MEDIA_TYPE', 'the Content-Encoding of the request body is not supported');
  refuse(res, 400, 'BODY_UNREADABLE', 'the request body could not be read');
};

/** The headers of the GraphiQL page yoga renders for a browser's GET (see shouldRenderGraphiQL). */
const graphiqlPageHeaders: express.RequestHandler = (req, res, next) => {
  if (req.method === 'GET' && (req.headers.accept ?? '').includes('text/html')) setToolPageSecurityHeaders(res);
  next();
};

function yogaLogger(runtime: Runtime): YogaLogger {
  const logger = runtime.logger.child({ component: 'graphql' });
  return {
    debug: () => {},
    info: (...args: unknown[]) => logger.info({ detail: args }, 'graphql'),
    warn: (...args: unknown[]) => logger.warn({ detail: args }, 'graphql'),
    error: (...args: unknown[]) => logger.error({ err: args[0] }, 'graphql request failed'),
  };
}

export function createGraphQLRouter(runtime: Runtime, executor: Executor): express.Router {
  const origins = runtime.config.corsOrigins;
  const persisted = new PersistedOperations({ schema: executor.schema, trustedDocuments: runtime.config.graphqlTrustedDocuments });
  const yoga = createYoga({
    schema: executor.schema,
    graphqlEndpoint: GRAPHQL_PATH,
    // A browser's GET (Accept: text/html) gets GraphiQL when the front door is on; otherwise
    // yoga answers it 406, as it answers any GET that accepts no GraphQL response type.
    graphiql: runtime.config.frontDoor ? GRAPHIQL_OPTIONS : false,
    renderGraphiQL,
    landingPage: false,
    batching: false,
    multipart: false,
    // GraphQL-over-HTTP persisted documents name theirs by `documentId` (see persisted-operations.ts).
    extraParamNames: ['documentId'],
    maxRequestBodySize: MAX_REQUEST_BODY_BYTES,
    logging: yogaLogger(runtime),
    cors: {
      origin: origins.includes('*') ? '*' : origins,
      methods: ['GET', 'POST'],
      allowedHeaders: ['Authorization', 'Content-Type', 'DPoP'],
      exposedHeaders: ['WWW-Authenticate', 'DPoP-Nonce'],
      credentials: false,
    },
    plugins: [useParameterJsonErrors, useExecutor(runtime, executor, persisted)],
  });
  const router = express.Router();
  if (runtime.config.frontDoor) router.use(GRAPHQL_PATH, graphiqlPageHeaders);
  router.use(GRAPHQL_PATH, refuseUnsupportedMediaType, refuseOversizedBody, readJsonBody(MAX_REQUEST_BODY_BYTES), answerPlainPost(runtime, executor, persisted), yoga, refuseUnreadableBody);
  return router;
}

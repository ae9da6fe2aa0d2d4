/**
 * POST/GET /graphql: graphql-yoga handles the HTTP side — request parsing, batching (off),
 * body size, CORS, content negotiation, turning `extensions.http` into the status line and
 * headers — and hands each request's parameters to the shared Executor after checking the
 * bearer token, so HTTP clients and the REST layer go through the very same pipeline.
 */
import type express from 'express';
import type { IncomingMessage } from 'node:http';
import type { ExecutionResult } from 'graphql';
import { createYoga, type GraphQLParams, type Plugin, type YogaLogger } from 'graphql-yoga';
import type { Runtime } from '../runtime.js';
import { authenticateRequest, withResourceMetadata } from '../tokens/bearer.js';
import { InvalidToken } from '../oauth/errors.js';
import { asRequestError, formatError, GRAPHQL_METHODS, httpStatusOf, rejectRequest, GqlError, GqlUnauthenticated, GqlUnavailable, type HttpExtension, type RequestRejection } from './errors.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { GRAPHIQL_OPTIONS, renderGraphiQL } from '../front-door/graphiql.js';
import { setToolPageSecurityHeaders } from '../http/security-headers.js';
import { isUrlTooLong, URL_TOO_LONG } from '../http/client-error.js';
import type { Executor } from './executor.js';
import { NOT_UTF8, readTextBody, REPEATED_MEMBER } from './text-body.js';
import { answerPlainPost } from './plain-post.js';
import { namesPersistedDocument, PersistedOperations, type PersistedRequest } from './persisted-operations.js';
import { awaitsContinue } from '../http/expect-continue.js';
import { repeatedMemberProblem } from '../http/json-members.js';
import { callErrorHandler, inSequence } from '../http/middleware-sequence.js';

export const GRAPHQL_PATH = '/graphql';
/** Documents are at most a few thousand tokens; variables of one order fit easily. */
const MAX_REQUEST_BODY_BYTES = 256 * 1024;

/**
 * The one place request-level errors get their shape, whoever raised them (our Executor, the
 * token check, yoga's own request checks): yoga's refusals are put in this API's terms
 * (`asRequestError`), and since yoga turns `extensions.http` into the status line and headers
 * and then strips it from the body, the status is put back (`extensions.http.status`) through
 * the result's own `stringify`, which yoga uses on the stripped result. A client reading only
 * the body still sees why the whole request failed.
 */
const useRequestErrorShape: Plugin = {
  onResultProcess({ result, setResult }) {
    if (Array.isArray(result) || !('errors' in result) || !result.errors?.length) return;
    const errors = result.errors.map(asRequestError);
    if (!errors.some((error) => httpStatusOf(error) !== undefined)) return;
    setResult({
      ...result,
      errors,
      stringify(sanitized: unknown) {
        return JSON.stringify({ ...(sanitized as object), errors: errors.map(formatError) });
      },
    } as ExecutionResult);
  },
};

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
      if (computed) return setResult(withResourceMetadataChallenge(computed, resource.metadataUrl));
      // Yoga's parameter check (after this hook) wants a query; a request that names its
      // document by id has none yet, so it passes with an empty one until the handler resolves it.
      if (params.query == null && namesPersistedDocument(persistedRequest(params, request))) setParams({ ...params, query: '' });
      setParamsHandler(async ({ request, params }) => {
        // Yoga checks every parameter's type but this one.
        const operationName: unknown = params.operationName;
        if (operationName != null && typeof operationName !== 'string') {
          const given = Array.isArray(operationName) ? 'array' : typeof operationName;
          const message = `Expected "operationName" param to be a string, but given ${given}.`;
          return { errors: [rejectRequest('INVALID_PARAMETER', message, { extensions: { field: 'operationName' } })] };
        }
        let principal;
        try {
          const url = new URL(request.url);
          const req = (context as { req?: IncomingMessage }).req;
          principal = await authenticateRequest(runtime, {
            authorization: request.headers.get('authorization'),
            dpop: request.headers.get('dpop') ?? undefined,
            // A DPoP proof names the method sent (RFC 9449 §4.2 htm), HEAD included.
            method: req && headRequests.has(req) ? 'HEAD' : request.method,
            path: url.pathname + url.search,
            resource: resource.identifier,
          });
        } catch (error) {
          if (error instanceof InvalidToken) {
            return withResourceMetadataChallenge({ errors: [GqlUnauthenticated.fromInvalidToken(error)] }, resource.metadataUrl);
          }
          if (isDatabaseUnavailable(error)) return GqlUnavailable.resultFor(error, runtime.logger);
          throw error;
        }
        let source: string | undefined;
        try {
          source = persisted.resolve(persistedRequest(params, request));
        } catch (error) {
          if (error instanceof GqlError) return { errors: [error] };
          throw error;
        }
        return withResourceMetadataChallenge(
          await executor.run({
            principal,
            source,
            variables: params.variables,
            operationName: params.operationName,
            method: request.method,
          }),
          resource.metadataUrl,
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
        if (error instanceof SyntaxError) throw rejectRequest('INVALID_PARAMETER', 'the variables and extensions parameters must be JSON');
        throw error;
      }
    });
  },
};

/** The POST body types yoga parses (multipart is off). */
const ACCEPTED_POST_TYPES = ['application/json', 'application/graphql', 'application/x-www-form-urlencoded'];

/** The media types yoga answers in (its result processors), the first two being JSON. */
const ANSWER_TYPES = ['application/json', 'application/graphql-response+json', 'text/event-stream', 'multipart/mixed'];

/** What yoga's `cors` option is given, so the answers sent before yoga can carry the same headers. */
const CORS = {
  methods: ['GET', 'POST'],
  allowedHeaders: ['Authorization', 'Content-Type', 'DPoP'],
  // Allow (405) and Retry-After (503) are not CORS-safelisted response headers: without these a page cannot read them.
  exposedHeaders: ['WWW-Authenticate', 'DPoP-Nonce', 'Allow', 'Retry-After'],
  credentials: false,
  // As the REST and OAuth endpoints: without it Chromium keeps a preflight 5 s, one OPTIONS for nearly every call.
  maxAge: 600,
} as const;

/**
 * The CORS headers yoga's `cors` option gives an answer to a request from `origin` (the rules of
 * @whatwg-node/server's useCORS, for our options), so a cross-origin page can read a refusal sent
 * before yoga as it reads yoga's answers. test/graphql/http.test.ts compares the two.
 */
function corsHeaders(origins: readonly string[], origin: string | undefined): Record<string, string> {
  if (origin === undefined) return {};
  const headers: Record<string, string> =
    origins.includes('*') || origins.length === 0
      ? { 'Access-Control-Allow-Origin': origin, Vary: 'Origin' }
      : origins.length === 1
        ? { 'Access-Control-Allow-Origin': origins[0]! }
        : origins.includes(origin)
          ? { 'Access-Control-Allow-Origin': origin, Vary: 'Origin' }
          : { 'Access-Control-Allow-Origin': 'null' };
  headers['Access-Control-Allow-Methods'] = CORS.methods.join(', ');
  headers['Access-Control-Allow-Headers'] = CORS.allowedHeaders.join(', ');
  headers['Access-Control-Expose-Headers'] = CORS.exposedHeaders.join(', ');
  headers['Access-Control-Max-Age'] = String(CORS.maxAge);
  return headers;
}

/** Sends a refusal before yoga sees the request (see `refusalSender`). */
type Refuse = (req: express.Request, res: express.Response, reason: RequestRejection, message: string, http: HttpExtension, extensions?: Record<string, unknown>) => void;

/**
 * How a refusal sent before yoga sees the request goes out: shaped as yoga sends ours (useRequestErrorShape), in the
 * JSON type the client prefers, with the CORS headers yoga would give it for these allowed `origins`.
 */
function refusalSender(origins: readonly string[]): Refuse {
  return function refuse(req, res, reason, message, http, extensions) {
    const error = rejectRequest(reason, message, { http, ...(extensions && { extensions }) });
    const type = req.accepts(ANSWER_TYPES.slice(0, 2)) || 'application/json';
    res
      .status(http.status)
      .set(corsHeaders(origins, req.headers.origin))
      .set(http.headers ?? {})
      .type(type)
      .send(JSON.stringify({ errors: [formatError(error)] }));
  };
}

/** The names of UTF-8 (RFC 8259 §8.1: JSON is UTF-8; yoga reads every body type as UTF-8). */
const UTF8 = new Set(['utf-8', 'utf8']);

/** The `charset` parameter of a media type, lower-cased and unquoted (RFC 9110 §8.3.1), if it has one. */
function charsetOf(parameters: readonly string[]): string | undefined {
  for (const parameter of parameters) {
    const equals = parameter.indexOf('=');
    if (equals < 0 || parameter.slice(0, equals).trim().toLowerCase() !== 'charset') continue;
    const value = parameter.slice(equals + 1).trim().toLowerCase();
    return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
  }
  return undefined;
}

/**
 * Yoga answers other content types with a bare 415; clients get a GraphQL error instead. Yoga
 * matches a type byte for byte, while media types are case-insensitive and may have spaces around
 * `;` (RFC 9110 §8.3.1): an accepted type is handed on written as yoga (and readTextBody) read it.
 * Every body is read as UTF-8, so one declared in another charset is refused (415) rather than misread.
 */
function refuseUnsupportedMediaType(refuse: Refuse): express.RequestHandler {
  return function refuseUnsupportedMediaType(req, res, next) {
    if (req.method !== 'POST') return next();
    const [essence = '', ...parameters] = (req.headers['content-type'] ?? '').split(';');
    const type = essence.trim().toLowerCase();
    if (ACCEPTED_POST_TYPES.includes(type)) {
      const charset = charsetOf(parameters);
      if (charset === undefined || UTF8.has(charset)) {
        req.headers['content-type'] = [type, ...parameters.map((parameter) => parameter.trim())].join(';');
        return next();
      }
      req.resume();
      return refuse(req, res, 'UNSUPPORTED_MEDIA_TYPE', `POST /graphql takes a UTF-8 body (got charset=${charset.slice(0, 32)})`, { status: 415 });
    }
    req.resume();
    refuse(req, res, 'UNSUPPORTED_MEDIA_TYPE', `POST /graphql takes a body of type application/json (got ${type || 'none'})`, { status: 415 });
  };
}

/** What the Accept header is negotiated against: only UTF-8 is sent, so a charset parameter must say it. */
const NEGOTIATED_TYPES = ANSWER_TYPES.map((type) => `${type}; charset=utf-8`);

/**
 * An Accept no answer of ours satisfies is refused before the operation runs (yoga would run it,
 * a mutation included, then answer a bare 406). A browser's GET for GraphiQL passes when the
 * front door serves it. Otherwise the Accept is negotiated here, by quality values and parameters
 * (RFC 9110 §12.5.1), and yoga is handed the type chosen: yoga takes the first type listed, q=0
 * included, and refuses `application/json; charset=utf-8`.
 */
function refuseUnacceptableAnswer(refuse: Refuse, graphiql: boolean): express.RequestHandler {
  return function refuseUnacceptableAnswer(req, res, next) {
    const accept = req.headers.accept;
    // The common values answer at once, without negotiation.
    if (accept === undefined || accept === 'application/json' || accept === '*/*' || accept.trim() === '' || (req.method !== 'GET' && req.method !== 'POST')) return next();
    const types = graphiql && req.method === 'GET' ? [...NEGOTIATED_TYPES, 'text/html'] : NEGOTIATED_TYPES;
    const chosen = req.accepts(types);
    if (chosen) {
      req.headers.accept = chosen.split(';')[0];
      return next();
    }
    req.resume();
    refuse(req, res, 'NOT_ACCEPTABLE', `/graphql answers in ${ANSWER_TYPES.slice(0, 2).join(' or ')} (Accept: ${accept.slice(0, 64)})`, { status: 406 });
  };
}

/** The GraphQL-over-HTTP request parameters a GET carries in its query string. */
const GRAPHQL_PARAMETERS = ['query', 'operationName', 'variables', 'extensions', 'documentId'];

/** What makes GraphQL parameters (a GET's query string, a form body) ambiguous, as the refusal names it. */
function ambiguousParameter(search: URLSearchParams, where: string): { reason: RequestRejection; message: string; field: string } | undefined {
  const field = GRAPHQL_PARAMETERS.find((name) => search.getAll(name).length > 1);
  if (field !== undefined) return { reason: 'INVALID_PARAMETER', message: `the ${where} names the "${field}" parameter more than once`, field };
  for (const name of ['variables', 'extensions']) {
    const text = search.get(name);
    if (text === null || !isJson(text)) continue;
    const repeated = repeatedMemberProblem(text, `the ${name} parameter`);
    if (repeated) return { reason: 'DUPLICATE_JSON_MEMBER', message: repeated.message, field: `${name}.${repeated.field}` };
  }
  return undefined;
}

/** Whether JSON.parse takes `text` (what is not JSON is yoga's to refuse). */
function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * A GET or form POST naming a GraphQL parameter twice is no well-formed request (GraphQL over HTTP
 * §GET: one URLSearchParams), nor are `variables` or `extensions` naming a member twice (read as
 * the last copy, as a JSON body's would be). Refused here, because yoga's adapter rebuilds a
 * GET's URL from Express's parsed `req.query`, where the values are an array it writes back joined
 * by commas: two `query` values would run as one document made of both; a form's last wins.
 */
function refuseAmbiguousParameters(refuse: Refuse): express.RequestHandler {
  return function refuseAmbiguousParameters(req, res, next) {
    let problem;
    if (req.method === 'GET') {
      const index = req.originalUrl.indexOf('?');
      problem = ambiguousParameter(new URLSearchParams(index < 0 ? '' : req.originalUrl.slice(index + 1)), 'query string');
    } else if (typeof req.body === 'string' && req.is('application/x-www-form-urlencoded')) {
      problem = ambiguousParameter(new URLSearchParams(req.body), 'form body');
    }
    if (problem === undefined) return next();
    refuse(req, res, problem.reason, problem.message, { status: 400 }, { field: problem.field });
  };
}

/**
 * Refuses a body declared larger than the limit at once, with a GraphQL error, so a client that
 * announced a huge body is answered without sending it. The rest is read and discarded while the
 * answer goes out (bounded by the server's requestTimeout); Node still closes the connection
 * afterwards, so a client that keeps uploading may see a reset.
 */
function refuseOversizedBody(refuse: Refuse): express.RequestHandler {
  return function refuseOversizedBody(req, res, next) {
    const length = Number(req.headers['content-length'] ?? 0);
    if (!(length > MAX_REQUEST_BODY_BYTES)) return next();
    // A client waiting for 100 Continue has sent nothing to discard; reading would ask it for the body.
    if (!awaitsContinue(req)) req.resume();
    refuseTooLarge(refuse, req, res);
  };
}

/** One answer for a body over the limit, declared (above) or found while inflating it (below). */
function refuseTooLarge(refuse: Refuse, req: express.Request, res: express.Response): void {
  refuse(req, res, 'BODY_TOO_LARGE', `the request body is larger than ${MAX_REQUEST_BODY_BYTES} bytes`, { status: 413 });
}

/**
 * The one answer to a body `readTextBody` could not read (body-parser's errors: corrupt
 * compressed data, an unsupported Content-Encoding, an inflated body over the limit; its own:
 * a JSON body that is not UTF-8), as a
 * GraphQL error; anything else goes on to the app's last-resort handler.
 */
function refuseUnreadableBody(refuse: Refuse): express.ErrorRequestHandler {
  return function refuseUnreadableBody(error: unknown, req, res, next) {
    const { status, type } = (error ?? {}) as { status?: unknown; type?: unknown };
    if (res.headersSent || typeof status !== 'number' || status < 400 || status >= 500) return next(error);
    if (type === 'entity.too.large') return refuseTooLarge(refuse, req, res);
    if (type === 'encoding.unsupported') return refuse(req, res, 'UNSUPPORTED_MEDIA_TYPE', 'the Content-Encoding of the request body is not supported', { status: 415 });
    if (type === REPEATED_MEMBER) {
      return refuse(req, res, 'DUPLICATE_JSON_MEMBER', (error as Error).message, { status: 400 }, { field: (error as { field: string }).field });
    }
    if (type === NOT_UTF8) {
      return refuse(req, res, (error as { json: boolean }).json ? 'INVALID_JSON' : 'BODY_UNREADABLE', 'the request body is not valid UTF-8', { status: 400 });
    }
    refuse(req, res, 'BODY_UNREADABLE', 'the request body could not be read', { status: 400 });
  };
}

/** A GET's query can make the URL too long for the app (see src/http/client-error.ts): said as a GraphQL error here. */
function refuseLongUrl(refuse: Refuse): express.RequestHandler {
  return function refuseLongUrl(req, res, next) {
    if (!isUrlTooLong(req)) return next();
    req.resume();
    refuse(req, res, 'URL_TOO_LONG', URL_TOO_LONG, { status: 414 });
  };
}

/**
 * The endpoint is /graphql (or /graphql/), in any case as every path of the app: yoga, which
 * reads `originalUrl` and matches it byte for byte, is handed it in lower case. A deeper path
 * (/graphql/x) is no endpoint: it gets the app's 404 whatever the method, where yoga would
 * answer an empty 404 and the fast path would have run the operation.
 */
function isTheEndpoint(req: express.Request): boolean {
  const path = req.path;
  const rest = path.slice(GRAPHQL_PATH.length);
  if ((rest !== '' && rest !== '/') || path.slice(0, GRAPHQL_PATH.length).toLowerCase() !== GRAPHQL_PATH) return false;
  if (!req.originalUrl.startsWith(GRAPHQL_PATH) && req.originalUrl.slice(0, GRAPHQL_PATH.length).toLowerCase() === GRAPHQL_PATH) {
    req.originalUrl = GRAPHQL_PATH + req.originalUrl.slice(GRAPHQL_PATH.length);
  }
  return true;
}

/** Yoga answers OPTIONS (a CORS preflight or not) with 204; with Allow, it also says what the endpoint serves (RFC 9110 §9.3.7). */
const allowOnOptions: express.RequestHandler = (req, res, next) => {
  if (req.method === 'OPTIONS') res.setHeader('Allow', GRAPHQL_METHODS);
  next();
};

/** The HEAD requests `headAsGet` handed on as GETs. */
const headRequests = new WeakSet<IncomingMessage>();

/**
 * RFC 9110 §9.3.2: HEAD answers as GET would, without the body; yoga only knows GET and POST,
 * so from here on a HEAD is handled as the GET it stands for (a query only: a mutation is
 * refused as over GET). Node sends no body for a HEAD whatever is written. The method is put
 * back before the app's access log and metrics read it.
 */
const headAsGet: express.RequestHandler = (req, res, next) => {
  if (req.method !== 'HEAD') return next();
  headRequests.add(req);
  req.method = 'GET';
  const restore = () => {
    req.method = 'HEAD';
  };
  res.prependOnceListener('finish', restore);
  res.prependOnceListener('close', restore);
  next();
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

export function createGraphQLRouter(runtime: Runtime, executor: Executor): express.RequestHandler {
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
      methods: [...CORS.methods],
      allowedHeaders: [...CORS.allowedHeaders],
      exposedHeaders: [...CORS.exposedHeaders],
      credentials: CORS.credentials,
      maxAge: CORS.maxAge,
    },
    plugins: [useParameterJsonErrors, useExecutor(runtime, executor, persisted), useRequestErrorShape],
  });
  const refuse = refusalSender(origins);
  // The steps every request takes run as one function, as the app's own middleware (src/http/middleware-sequence.ts),
  // with no Express router: mounted on one, each step's layer matched the path and rewrote the URL again.
  const steps = inSequence([
    allowOnOptions,
    headAsGet,
    ...(runtime.config.frontDoor ? [graphiqlPageHeaders] : []),
    refuseLongUrl(refuse),
    refuseUnacceptableAnswer(refuse, runtime.config.frontDoor),
    refuseUnsupportedMediaType(refuse),
    refuseOversizedBody(refuse),
    readTextBody(MAX_REQUEST_BODY_BYTES),
    refuseAmbiguousParameters(refuse),
    answerPlainPost(runtime, executor, persisted),
    (req, res) => yoga(req, res),
  ]);
  const onError = refuseUnreadableBody(refuse);
  return function graphqlEndpoint(req, res, next) {
    if (!isTheEndpoint(req)) return next();
    // The sequence hands on only an error or `'router'` (leave: the app's 404), as a router's layer would.
    steps(req, res, (error?: unknown) => (error === undefined || error === 'router' ? next() : callErrorHandler(onError, error, req, res, next)));
  };
}

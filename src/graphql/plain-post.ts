/**
 * Answers the ordinary POST /graphql itself — a JSON body `readTextBody` has read, a Bearer
 * token, no Origin, a plain Accept — so a successful operation skips graphql-yoga's fetch
 * Request and Response and its plugin chain. It runs the same steps as yoga's handler in
 * http.ts: bearer check, persisted-document resolution, the shared Executor. Anything else,
 * and every result with errors (status, challenge and masking are yoga's), goes on to yoga; a
 * result already computed is handed over on the request, so no operation ever runs twice.
 * Measured gain and removal condition: docs/PERFORMANCE.md.
 */
import type { RequestHandler } from 'express';
import type { ExecutionResult } from 'graphql';
import type { Runtime } from '../runtime.js';
import { authenticateRequest } from '../tokens/bearer.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { GqlUnavailable } from './errors.js';
import type { Executor } from './executor.js';
import type { PersistedOperations } from './persisted-operations.js';

declare module 'http' {
  interface IncomingMessage {
    /** A result `answerPlainPost` computed but left to yoga to send (it has errors). */
    graphqlResult?: ExecutionResult;
  }
}

interface PlainOperation {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
}

const PLAIN_KEYS = new Set(['query', 'variables', 'operationName']);

/** A body yoga would take as is: a query string, at most variables and an operation name, nothing else. */
function isPlainOperation(body: unknown): body is PlainOperation {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  for (const key in body) if (!PLAIN_KEYS.has(key)) return false;
  const { query, variables, operationName } = body as Record<string, unknown>;
  return (
    typeof query === 'string' &&
    (variables == null || (typeof variables === 'object' && !Array.isArray(variables))) &&
    (operationName == null || typeof operationName === 'string')
  );
}

/** The type yoga answers a successful result with, for the Accept values it reads unambiguously. */
function responseType(accept: string | undefined): string | undefined {
  switch (accept) {
    case undefined:
    case '*/*':
    case 'application/json':
      return 'application/json; charset=utf-8';
    case 'application/graphql-response+json':
      return 'application/graphql-response+json; charset=utf-8';
    default:
      return undefined;
  }
}

export function answerPlainPost(runtime: Runtime, executor: Executor, persisted: PersistedOperations): RequestHandler {
  const resource = runtime.resources.graphql;
  return async function answerPlainPost(req, res, next) {
    const type = responseType(req.headers.accept);
    const authorization = req.headers.authorization;
    const body = req.body;
    if (
      req.method !== 'POST' ||
      type === undefined ||
      req.headers.origin !== undefined ||
      req.headers.dpop !== undefined ||
      !authorization?.startsWith('Bearer ') ||
      !isPlainOperation(body)
    ) {
      return next();
    }
    try {
      let principal;
      let source;
      try {
        principal = await authenticateRequest(runtime, { authorization, dpop: undefined, method: 'POST', path: req.originalUrl, resource: resource.identifier });
        source = persisted.resolve({ query: body.query, extensions: undefined, documentId: undefined });
      } catch (error) {
        // Refusals are yoga's to word and send; with no DPoP proof, checking again is harmless. A database out of reach
        // (or every pooled connection busy) is not checked again: that would double the wait, and the load.
        if (isDatabaseUnavailable(error)) req.graphqlResult = GqlUnavailable.resultFor(error, runtime.logger);
        return next();
      }
      const result = await executor.run({ principal, source, variables: body.variables, operationName: body.operationName, method: 'POST' });
      if (result.errors) {
        req.graphqlResult = result;
        return next();
      }
      const text = JSON.stringify(result);
      res.writeHead(200, { 'content-type': type, 'content-length': Buffer.byteLength(text) });
      res.end(text);
    } catch (error) {
      next(error);
    }
  };
}

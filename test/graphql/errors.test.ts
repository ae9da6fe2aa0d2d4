/**
 * asRequestError puts graphql-yoga's own refusals of a request in this API's terms; the HTTP
 * tests (http.test.ts) check the answers, these the mapping rules themselves.
 */
import { describe, expect, it } from 'vitest';
import { GraphQLError } from 'graphql';
import { asRequestError, formatError, GqlNotFound, rejectRequest } from '../../src/graphql/errors.js';

/** An error as yoga's request parsers and checks make them (@graphql-tools/utils createGraphQLError). */
const yoga = (message: string, http: Record<string, unknown>, code = 'BAD_REQUEST', more: Record<string, unknown> = {}) =>
  new GraphQLError(message, { extensions: { http, code, ...more } });

describe('asRequestError', () => {
  it.each([
    ['POST body sent invalid JSON.', { spec: true, status: 400 }, 'BAD_REQUEST', 400, 'INVALID_JSON', undefined],
    ['POST body is expected to be object but received null', { status: 400 }, 'BAD_REQUEST', 400, 'BODY_NOT_AN_OBJECT', undefined],
    ['Batching is not supported.', { status: 400 }, 'BAD_REQUEST', 400, 'BATCHING_NOT_SUPPORTED', undefined],
    ['Must provide query string.', { spec: true, status: 400, headers: { Allow: 'GET, POST' } }, 'BAD_REQUEST', 400, 'INVALID_PARAMETER', 'query'],
    ['Expected "variables" param to be empty or an object, but given array.', { status: 400, headers: { Allow: 'GET, POST' } }, 'BAD_REQUEST', 400, 'INVALID_PARAMETER', 'variables'],
    ['Expected "operationName" param to be a string, but given number.', { status: 400 }, 'BAD_REQUEST', 400, 'INVALID_PARAMETER', 'operationName'],
    ['Unexpected parameter "querry" in the request body.', { status: 400 }, 'BAD_REQUEST', 400, 'INVALID_PARAMETER', 'querry'],
    ['GraphQL only supports GET and POST requests.', { status: 405, headers: { Allow: 'GET, POST' } }, 'BAD_REQUEST', 405, 'METHOD_NOT_ALLOWED', undefined],
    ['Request body too large', { status: 413 }, 'REQUEST_ENTITY_TOO_LARGE', 413, 'BODY_TOO_LARGE', undefined],
    ['Content-Length header is invalid.', { status: 400 }, 'BAD_REQUEST', 400, 'BODY_UNREADABLE', undefined],
    ['a check yoga words otherwise', { status: 400 }, 'BAD_REQUEST', 400, 'INVALID_PARAMETER', undefined],
  ])('%s → INVALID_ARGUMENT %i', (message, http, code, status, reason, field) => {
    const error = asRequestError(yoga(message, http, code, { originalError: { name: 'SyntaxError', message: 'at position 1' } }));
    expect(error.message).toBe(message);
    expect(error.extensions).toEqual({
      code: 'INVALID_ARGUMENT',
      reason,
      ...(field && { field }),
      // No `spec` (yoga would answer 200 for Accept: application/json) and `Allow` only on a 405.
      http: status === 405 ? { status, headers: { Allow: 'GET, HEAD, POST, OPTIONS' } } : { status },
    });
  });

  it('gives an unexpected error yoga masked its 500, and leaves ours and field errors alone', () => {
    const masked = asRequestError(new GraphQLError('Unexpected error.', { extensions: { code: 'INTERNAL_SERVER_ERROR', unexpected: true } }));
    expect(masked.extensions).toEqual({ code: 'INTERNAL_SERVER_ERROR', http: { status: 500 } });
    const ours = new GqlNotFound('no order 7');
    expect(asRequestError(ours)).toBe(ours);
    const field = new GraphQLError('Unexpected error.', { path: ['order'], extensions: { code: 'INTERNAL_SERVER_ERROR' } });
    expect(asRequestError(field)).toBe(field);
  });
});

describe('formatError', () => {
  it('shows the status of a request-level error, not its headers, and nothing for a field error', () => {
    const refusal = rejectRequest('METHOD_NOT_ALLOWED', 'no', { http: { status: 405, headers: { Allow: 'POST' } } });
    expect(formatError(refusal)).toEqual({ message: 'no', extensions: { code: 'INVALID_ARGUMENT', reason: 'METHOD_NOT_ALLOWED', http: { status: 405 } } });
    expect(formatError(new GraphQLError('bad', { path: ['a'] }))).toEqual({ message: 'bad', path: ['a'] });
    expect(formatError(new GqlNotFound('none'))).toEqual({ message: 'none', extensions: { code: 'NOT_FOUND' } });
  });
});

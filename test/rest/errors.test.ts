import { describe, expect, it } from 'vitest';
import { fromGraphQLErrors, toRestError } from '../../src/rest/errors.js';

describe('GraphQL errors as REST errors', () => {
  const map = (extensions: Record<string, unknown>, message = 'why') => fromGraphQLErrors([{ message, extensions }]);

  it.each([
    [{ code: 'NOT_FOUND' }, 404, 'NOT_FOUND'],
    [{ code: 'INVALID_ARGUMENT' }, 400, 'INVALID_ARGUMENT'],
    [{ code: 'FAILED_PRECONDITION', reason: 'ILLEGAL_STATUS_MOVE' }, 409, 'FAILED_PRECONDITION'],
    [{ code: 'FAILED_PRECONDITION', reason: 'ETAG_MISMATCH' }, 409, 'ABORTED'],
    [{ code: 'UNAUTHENTICATED' }, 401, 'UNAUTHENTICATED'],
    [{ code: 'FORBIDDEN', requiredScope: 'orders:write' }, 403, 'PERMISSION_DENIED'],
    [{ code: 'INTERNAL_SERVER_ERROR' }, 500, 'INTERNAL'],
    [{}, 500, 'INTERNAL'],
  ])('%j → %i %s', (extensions, status, name) => {
    const error = map(extensions);
    expect(error.httpStatus).toBe(status);
    expect(error.toBody().error).toMatchObject({ code: status, status: name });
  });

  it('keeps the message of client errors and masks the rest', () => {
    expect(map({ code: 'FAILED_PRECONDITION' }, 'cannot move an order from delivered to paid').message).toBe('cannot move an order from delivered to paid');
    expect(map({ code: 'INTERNAL_SERVER_ERROR' }, 'relation "orders" does not exist').message).toBe('internal error');
  });

  it('answers 401/403 with the RFC 6750 challenge', () => {
    expect(map({ code: 'FORBIDDEN', requiredScope: 'orders:write' }).headers['WWW-Authenticate']).toBe(
      'Bearer realm="fieldgate", error="insufficient_scope", error_description="this request needs the scope orders:write", scope="orders:write"',
    );
    expect(map({ code: 'UNAUTHENTICATED' }, 'the access token expired').headers['WWW-Authenticate']).toBe(
      'Bearer realm="fieldgate", error="invalid_token", error_description="the access token expired"',
    );
  });

  it('maps body-parser failures by status and masks unknown errors', () => {
    expect(toRestError(Object.assign(new Error('x'), { status: 413, type: 'entity.too.large' })).httpStatus).toBe(413);
    expect(toRestError(new TypeError('boom')).toBody()).toEqual({
      error: { code: 500, status: 'INTERNAL', message: 'internal error', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: 'fieldgate.dev', reason: 'INTERNAL', metadata: {} }] },
    });
  });
});

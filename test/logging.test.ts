import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase, LogCapture } from './support/runtime.js';
import { accessLogger, createLogger, flushLogger } from '../src/logger.js';

const PASSWORD = 'hunter2-very-secret-password';
const TOKEN = 'eyJhbGciOiJFUzI1NiJ9.secret-token-value.signature';
const CODE = 'the-authorization-code-value';

describeEachDatabase('request logging', (context) => {
  it('logs one structured record per request with a request id, method, path and status', async () => {
    const { app, logs } = context();
    const res = await request(app).get('/healthz').set('X-Request-Id', 'log-test-1');
    expect(res.status).toBe(200);
    const record = logs.records().find((r) => (r.req as { id?: string } | undefined)?.id === 'log-test-1');
    expect(record).toMatchObject({ req: { id: 'log-test-1', method: 'GET', path: '/healthz' }, res: { statusCode: 200 } });
  });

  it('never logs passwords, tokens, codes, cookies or Authorization headers', async () => {
    const { app, logs } = context();
    await request(app)
      .post('/login')
      .set('Authorization', `Bearer ${TOKEN}`)
      .set('Cookie', `session=${TOKEN}`)
      .type('form')
      .send({ username: 'demo', password: PASSWORD });
    await request(app).get('/products').query({ access_token: TOKEN }).set('Authorization', `Bearer ${TOKEN}`);
    await request(app).get('/demo/callback').query({ code: CODE, state: 'x' });
    await request(app).post('/token').auth('client', PASSWORD).type('form').send({ grant_type: 'authorization_code', code: CODE });
    expect(logs.lines.length).toBeGreaterThanOrEqual(4);
    expect(logs.text).not.toContain(PASSWORD);
    expect(logs.text).not.toContain(TOKEN);
    expect(logs.text).not.toContain('secret-token-value');
    expect(logs.text).not.toContain(CODE);
    expect(logs.text.toLowerCase()).not.toContain('authorization');
  });
});

describe('the logger', () => {
  /** Every parameter or header of the protocols the service speaks that carries a secret. */
  const SECRET_NAMES = [
    'password',
    'client_secret',
    'client_assertion',
    'code',
    'code_verifier',
    'device_code',
    'user_code',
    'access_token',
    'refresh_token',
    'id_token',
    'id_token_hint',
    'logout_token',
    'registration_access_token',
    'token',
    'csrf_token',
    'page_token',
    'authorization',
    'cookie',
    'dpop',
  ];

  it('redacts every protocol secret passed to it by name, in the main and the access logger (the second line of defence)', async () => {
    const lines = new LogCapture();
    const logger = createLogger('trace', lines);
    const record = Object.fromEntries(SECRET_NAMES.map((name) => [name, `value-of-${name}`]));
    logger.info(record, 'main');
    accessLogger(logger).info(record, 'access');
    logger.info({ req: { headers: { authorization: 'value-of-header', cookie: 'value-of-header', dpop: 'value-of-header' } } }, 'request');
    await flushLogger(logger);
    expect(lines.lines).toHaveLength(3);
    const [main, access] = lines.records();
    for (const name of SECRET_NAMES) {
      expect(main![name], name).toBe('[redacted]');
      expect(access![name], name).toBe('[redacted]');
    }
    expect(lines.text).not.toContain('value-of');
  });
});

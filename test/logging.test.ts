import { spawn } from 'node:child_process';
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

describe('the stdout logger', () => {
  /** Starts test/support/log-writer.ts; `lines` holds the records read from its stdout so far. */
  function logWriter(mode: 'wait' | 'exit' | 'throw', count: number) {
    const child = spawn(process.execPath, ['bin/run-ts.js', 'test/support/log-writer.ts', mode, String(count)], { stdio: ['pipe', 'pipe', 'pipe'] });
    const lines: { line: number }[] = [];
    let pending = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const parts = (pending + chunk).split('\n');
      pending = parts.pop()!;
      for (const part of parts) lines.push(JSON.parse(part) as { line: number });
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    return { child, lines, exited };
  }
  const numbered = (count: number) => Array.from({ length: count }, (_, i) => i + 1);

  it('shows the line of a quiet process while it runs, though its batch is far from full', async () => {
    const { child, lines, exited } = logWriter('wait', 1);
    await expect.poll(() => lines.length, { timeout: 10_000 }).toBe(1);
    expect(child.exitCode).toBeNull();
    child.stdin.end();
    expect(await exited).toBe(0);
    expect(lines.map((record) => record.line)).toEqual([1]);
  });

  it('writes every line of a burst, in order', async () => {
    const { child, lines, exited } = logWriter('wait', 5_000);
    await expect.poll(() => lines.length, { timeout: 10_000 }).toBe(5_000);
    child.stdin.end();
    await exited;
    expect(lines.map((record) => record.line)).toEqual(numbered(5_000));
  });

  it('loses no batched line when the process exits at once or fails', async () => {
    for (const mode of ['exit', 'throw'] as const) {
      const { lines, exited } = logWriter(mode, 30);
      expect(await exited, mode).toBe(mode === 'exit' ? 0 : 1);
      expect(lines.map((record) => record.line), mode).toEqual(numbered(30));
    }
  });
});

import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { sql } from 'drizzle-orm';
import { describeEachDatabase } from './support/runtime.js';

describeEachDatabase('health checks', (context) => {
  it('GET /healthz answers while the process is up', async () => {
    const res = await request(context().app).get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('GET /readyz answers ok when the database answers', async () => {
    const res = await request(context().app).get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', database: context().kind });
  });

  it('echoes a request id on every response', async () => {
    const res = await request(context().app).get('/healthz').set('X-Request-Id', 'abc-123');
    expect(res.headers['x-request-id']).toBe('abc-123');
    const fresh = await request(context().app).get('/healthz');
    expect(fresh.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers an unknown route with a Google-style 404', async () => {
    const res = await request(context().app).get('/no/such/route');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      error: { code: 404, status: 'NOT_FOUND', message: 'no route for GET /no/such/route', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: 'fieldgate.dev', reason: 'NO_SUCH_ROUTE', metadata: {} }] },
    });
  });
});

describe('readiness when the database is gone', () => {
  it('GET /readyz answers 503 after the database is closed', async () => {
    const { createTestRuntime } = await import('./support/runtime.js');
    const context = await createTestRuntime('pglite');
    await context.runtime.database.close();
    const res = await request(context.app).get('/readyz');
    expect(res.status).toBe(503);
    expect(res.body.status).toBe('unavailable');
    expect(res.headers['retry-after']).toBe('5');
  });

  it('GET /readyz answers 200 while every pooled PostgreSQL connection is busy: the database answers, the instance stays in', async () => {
    const { createTestRuntime } = await import('./support/runtime.js');
    const context = await createTestRuntime('postgres', {}, { poolSize: 1 });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held!: () => void;
    const holding = new Promise<void>((resolve) => (held = resolve));
    const busy = context.runtime.db.transaction(async (tx) => {
      await tx.execute(sql`select 1`);
      held();
      await released;
    });
    try {
      await holding;
      const res = await request(context.app).get('/readyz');
      expect(res.status, res.text).toBe(200);
    } finally {
      release();
      await busy;
      await context.close();
    }
  });

  it('GET /readyz answers 503 once the server is shutting down, while requests still run', async () => {
    const { createTestRuntime } = await import('./support/runtime.js');
    const { createApp } = await import('../src/app.js');
    const context = await createTestRuntime('pglite');
    try {
      let shuttingDown = false;
      const app = createApp(context.runtime, { isShuttingDown: () => shuttingDown });
      expect((await request(app).get('/readyz')).status).toBe(200);
      shuttingDown = true;
      const res = await request(app).get('/readyz');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'shutting_down', database: 'pglite' });
      expect((await request(app).get('/healthz')).status).toBe(200);
    } finally {
      await context.close();
    }
  });
});

import { describe, expect, it } from 'vitest';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import request from 'supertest';
import { callErrorHandler, inSequence } from '../../src/http/middleware-sequence.js';

/** A handler that notes its name in the request's trail, then does `then`. */
function step(name: string, then: RequestHandler = (_req, _res, next) => next()): RequestHandler {
  return (req, res, next) => {
    ((res.locals.trail as string[] | undefined) ??= []).push(name);
    return then(req, res, next);
  };
}

const afterwards: RequestHandler = (_req, res) => {
  res.status(404).json({ fellThrough: res.locals.trail ?? [] });
};
const onError: ErrorRequestHandler = (error: Error, _req, res, _next) => {
  res.status(500).json({ error: error.message, trail: res.locals.trail ?? [] });
};

/** The same handlers as Express layers of their own, and as one layer. */
function apps(handlers: RequestHandler[]): { layers: express.Express; sequence: express.Express } {
  const layers = express();
  for (const handler of handlers) layers.use(handler);
  layers.use(afterwards, onError);
  const sequence = express();
  sequence.use(inSequence(handlers));
  sequence.use(afterwards, onError);
  return { layers, sequence };
}

async function answers(handlers: RequestHandler[]): Promise<{ layers: unknown; sequence: unknown }> {
  const { layers, sequence } = apps(handlers);
  const read = async (app: express.Express) => {
    const response = await request(app).get('/x');
    return { status: response.status, body: response.body as unknown, text: response.text };
  };
  return { layers: await read(layers), sequence: await read(sequence) };
}

describe('middleware in sequence, as one Express layer', () => {
  const cases: [string, RequestHandler[], unknown][] = [
    ['each handler in turn, then the layers after it', [step('a'), step('b'), step('c')], { status: 404, body: { fellThrough: ['a', 'b', 'c'] } }],
    [
      'an answer ends it',
      [step('a'), step('b', (_req, res) => void res.status(201).json({ answered: res.locals.trail })), step('c')],
      { status: 201, body: { answered: ['a', 'b'] } },
    ],
    [
      'an error passed to next skips the rest',
      [step('a', (_req, _res, next) => next(new Error('passed'))), step('b')],
      { status: 500, body: { error: 'passed', trail: ['a'] } },
    ],
    [
      'a throw is an error',
      [
        step('a'),
        step('b', () => {
          throw new Error('thrown');
        }),
        step('c'),
      ],
      { status: 500, body: { error: 'thrown', trail: ['a', 'b'] } },
    ],
    ['a rejected promise is an error', [step('a', async () => Promise.reject(new Error('rejected'))), step('b')], { status: 500, body: { error: 'rejected', trail: ['a'] } }],
    ['a promise rejected with nothing is an error too', [step('a', async () => Promise.reject(undefined)), step('b')], { status: 500, body: { error: 'Rejected promise', trail: ['a'] } }],
    ["next('route') goes on", [step('a', (_req, _res, next) => next('route')), step('b')], { status: 404, body: { fellThrough: ['a', 'b'] } }],
  ];

  for (const [name, handlers, expected] of cases) {
    it(`${name}, as separate layers do`, async () => {
      const { layers, sequence } = await answers(handlers);
      expect(sequence).toMatchObject(expected as object);
      expect(sequence).toEqual(layers);
    });
  }

  it("next('router') leaves the app's router, skipping even the layers after the sequence, as separate layers do", async () => {
    const { layers, sequence } = await answers([step('a', (_req, _res, next) => next('router')), step('b')]);
    expect(sequence).toMatchObject({ status: 404, text: expect.stringContaining('Cannot GET /x') });
    expect(sequence).toEqual(layers);
  });

  it('runs each request through its own position in the list, whatever the others do meanwhile', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let arrived!: () => void;
    const holding = new Promise<void>((resolve) => (arrived = resolve));
    const { sequence } = apps([
      step('a', (req, _res, next) => {
        if (!req.query.hold) return next();
        arrived();
        void held.then(() => next());
      }),
      step('b'),
    ]);
    const slow = request(sequence).get('/x?hold=1').then((response) => response.body as unknown);
    // The second request runs the whole sequence while the first is held inside it.
    await holding;
    const fast = await request(sequence).get('/x');
    release();
    expect(fast.body).toEqual({ fellThrough: ['a', 'b'] });
    expect(await slow).toEqual({ fellThrough: ['a', 'b'] });
  });
});

describe('an error handler called as an Express error layer', () => {
  // Four parameters: Express tells an error handler by its arity.
  const failing =
    (fail: (error: Error) => unknown): ErrorRequestHandler =>
    (error: Error, _req, _res, _next) =>
      fail(error);

  it('hands a throw or a rejected promise of the handler on to next, as Express does', async () => {
    const handlers: [string, ErrorRequestHandler][] = [
      ['thrown', failing((error) => {
        throw new Error(`thrown while handling ${error.message}`);
      })],
      ['rejected', failing(async (error) => {
        throw new Error(`rejected while handling ${error.message}`);
      })],
    ];
    for (const [name, handler] of handlers) {
      for (const app of [express().use(step('a', (_req, _res, next) => next(new Error('boom')))).use(handler).use(onError),
        express().use((req, res, next) => callErrorHandler(handler, new Error('boom'), req, res, (error?: unknown) => onError(error, req, res, next)))]) {
        const response = await request(app).get('/x');
        expect(response.status, name).toBe(500);
        expect(response.body.error, name).toBe(`${name} while handling boom`);
      }
    }
  });
});

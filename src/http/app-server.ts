/**
 * The HTTP server an Express app is served by, whose requests and responses are created with the app's prototypes.
 * Express gives every request and response its own prototypes (`app.request`, `app.response`) with
 * `Object.setPrototypeOf` as it starts handling them. On Node 20 and 22 (V8 before 13) changing the prototype of an
 * object already in use leaves every later access to it on a slow path, which cost more than all of Express's
 * routing; an object created with the prototype Express then sets is left as it is. Node 24 pays no such cost, and
 * gets the same objects. Measured gain and removal condition: docs/PERFORMANCE.md.
 */
import http from 'node:http';
import type { Express } from 'express';

/** `http.createServer(options, app)`, its requests and responses born with the prototypes `app` gives them. */
export function createAppServer(app: Express, options: http.ServerOptions = {}): http.Server {
  return http.createServer(
    {
      ...options,
      IncomingMessage: bornWith(http.IncomingMessage, app.request),
      ServerResponse: bornWith(http.ServerResponse, app.response),
    },
    app,
  );
}

/**
 * A constructor that builds what `base` builds, with `prototype` as the new object's prototype from the start. Node's
 * IncomingMessage and ServerResponse are ES5 constructors, called here on the new object as their subclasses in Node
 * do (`Reflect.construct` with another `new.target` was measured slower than Express's own way).
 */
export function bornWith<T extends Function>(base: T, prototype: object): T {
  if (!(prototype instanceof base)) throw new TypeError(`the prototype given to ${base.name}'s objects must inherit from ${base.name}`);
  if (Function.prototype.toString.call(base).startsWith('class')) return base;
  const construct = base as unknown as (this: object, first: unknown, second: unknown) => void;
  function Born(this: object, first: unknown, second: unknown): void {
    construct.call(this, first, second);
  }
  Born.prototype = prototype;
  return Born as unknown as T;
}

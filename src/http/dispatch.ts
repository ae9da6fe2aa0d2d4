/**
 * Hands each request to the one router that serves its first path segment (`/token`,
 * `/products/7` → `products`, `/.well-known/jwks.json` → `.well-known`), instead of letting it
 * walk through every face's router in turn: Express matches each layer of each router it
 * enters, which cost a REST read or an OAuth flow more than the rest of its routing.
 *
 * Segments are matched as Express matches paths by default: case-insensitively, and with or
 * without a trailing slash. A request whose segment no router claims goes straight on (to the
 * 404 handler); one a router claims but does not answer goes on as well.
 */
import type { RequestHandler } from 'express';

export class SegmentDispatcher {
  private readonly routers = new Map<string, RequestHandler>();

  /** Routes every path under each of `paths` (given as `/segment`) to `router`. */
  mount(paths: readonly string[], router: RequestHandler): this {
    for (const path of paths) {
      const segment = firstSegment(path);
      if (!segment || path !== `/${segment}`) throw new Error(`mount a single path segment such as "/token", not "${path}"`);
      if (this.routers.has(segment.toLowerCase())) throw new Error(`"${path}" is mounted twice`);
      this.routers.set(segment.toLowerCase(), router);
    }
    return this;
  }

  readonly handler: RequestHandler = (req, res, next) => {
    const router = this.routers.get(firstSegment(req.path).toLowerCase());
    if (router) router(req, res, next);
    else next();
  };
}

function firstSegment(path: string): string {
  const end = path.indexOf('/', 1);
  return path.slice(1, end === -1 ? undefined : end);
}

/**
 * Hands each request to the one router that serves its first path segment (`/products/7` →
 * `products`) instead of letting it walk every face's router in turn. Segments match as
 * Express matches paths by default: case-insensitively, with or without a trailing slash; an
 * unclaimed or unanswered request goes on to the next handler.
 * Measured gain and removal condition: docs/PERFORMANCE.md.
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

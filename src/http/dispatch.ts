/**
 * Hands each request to the one router of its first path segment, matching as Express does (any case, optional
 * trailing slash). Measured gain and removal condition: docs/PERFORMANCE.md.
 */
import type { RequestHandler } from 'express';

export class SegmentDispatcher {
  private readonly routers = new Map<string, RequestHandler>();

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

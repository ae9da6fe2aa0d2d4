/**
 * RFC 8707 audiences: the REST API (the issuer URL), the GraphQL API and any RESOURCE_INDICATORS. A request naming
 * no resource gets Fieldgate's own two, never an external one.
 */
import { InvalidTarget } from '../oauth/errors.js';

export interface ProtectedResource {
  identifier: string;
  /**
   * Where RFC 9728 metadata for it is announced: under the issuer, where a proxy for the issuer's path forwards it; for
   * an issuer with a path it is served at the path-inserted address (§3.1) as well.
   */
  metadataUrl: string;
  /** A page for people (RFC 9728 §2); none where the front door, which serves them, is off. */
  documentation: string | undefined;
}

export const PROTECTED_RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/** Compares identifiers as URLs so `https://api.example` and `https://api.example/` are one. */
function canonical(identifier: string): string | undefined {
  try {
    const url = new URL(identifier);
    return url.hash || identifier.includes('#') ? undefined : url.href;
  } catch {
    return undefined;
  }
}

export class Resources {
  readonly rest: ProtectedResource;
  readonly graphql: ProtectedResource;
  readonly known: readonly string[];
  readonly defaults: readonly string[];
  private readonly byCanonical: ReadonlyMap<string, string>;

  constructor(issuer: string, external: readonly string[] = [], { frontDoor = true }: { frontDoor?: boolean } = {}) {
    const wellKnown = `${issuer}${PROTECTED_RESOURCE_METADATA_PATH}`;
    this.rest = { identifier: issuer, metadataUrl: wellKnown, documentation: frontDoor ? `${issuer}/api-reference` : `${issuer}/openapi.json` };
    this.graphql = { identifier: `${issuer}/graphql`, metadataUrl: `${wellKnown}/graphql`, documentation: frontDoor ? `${issuer}/graphql` : undefined };
    this.defaults = [this.rest.identifier, this.graphql.identifier];
    this.known = [...new Set([...this.defaults, ...external])];
    this.byCanonical = new Map(this.known.map((identifier) => [canonical(identifier)!, identifier]));
  }

  resolve(requested: readonly string[]): string[] {
    const resolved = requested.map((value) => {
      const key = canonical(value);
      if (key === undefined) throw new InvalidTarget('each resource must be an absolute URI without a fragment');
      const identifier = this.byCanonical.get(key);
      if (identifier === undefined) throw new InvalidTarget('the resource is not one this server issues tokens for');
      return identifier;
    });
    return [...new Set(resolved)];
  }

  /** A refresh may narrow, never widen. */
  narrow(granted: readonly string[], requested: readonly string[]): string[] {
    const allowed = granted.length === 0 ? this.defaults : granted;
    if (requested.length === 0) return [...allowed];
    const resolved = this.resolve(requested);
    if (resolved.some((identifier) => !allowed.includes(identifier))) {
      throw new InvalidTarget('the resource is more than this grant was authorized for');
    }
    return resolved;
  }
}

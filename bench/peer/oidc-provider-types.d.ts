// oidc-provider 9 ships no type declarations; this is the little the peer uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export type Configuration = Record<string, unknown>;

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: string, listener: (...args: unknown[]) => void): this;
    proxy: boolean;
  }

  export const errors: {
    InvalidTarget: new (description?: string) => Error;
  };
}

/**
 * The REST order calls the crash and load tests make, with a bearer token, over HTTP.
 */
import type http from 'node:http';
import { parseJson, send, type Reply } from './http.js';

export interface OrderView {
  id: number;
  status: string;
  memo: string | null;
  etag?: string;
}

export class OrderApi {
  constructor(
    private readonly baseUrl: string,
    private readonly accessToken: string,
    private readonly agent?: http.Agent,
  ) {}

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { authorization: `Bearer ${this.accessToken}`, ...extra };
  }

  create(productId: number, memo: string): Promise<Reply> {
    return send(`${this.baseUrl}/orders?fields=id,status,memo`, {
      method: 'POST',
      headers: this.headers({ 'content-type': 'application/json' }),
      body: JSON.stringify({ items: [{ productId, quantity: 1 }], memo }),
      agent: this.agent ?? false,
    });
  }

  patch(id: number, change: { memo?: string | null; status?: string }, ifMatch?: string): Promise<Reply> {
    const mask = Object.keys(change).join(',');
    return send(`${this.baseUrl}/orders/${id}?update_mask=${mask}&fields=id,status,memo`, {
      method: 'PATCH',
      headers: this.headers({ 'content-type': 'application/json', ...(ifMatch ? { 'if-match': ifMatch } : {}) }),
      body: JSON.stringify(change),
      agent: this.agent ?? false,
    });
  }

  get(id: number): Promise<Reply> {
    return send(`${this.baseUrl}/orders/${id}?fields=id,status,memo`, { headers: this.headers(), agent: this.agent ?? false });
  }

  /** Every order of the token's user, following the pages. */
  async list(): Promise<OrderView[]> {
    const all: OrderView[] = [];
    for (let offset = 0; ; offset += 200) {
      const reply = await send(`${this.baseUrl}/orders?fields=id,status,memo&limit=200&offset=${offset}`, { headers: this.headers(), agent: this.agent ?? false });
      if (reply.status !== 200) throw new Error(`GET /orders answered ${reply.status}: ${reply.body}`);
      const page = parseJson<OrderView[]>(reply);
      all.push(...page);
      if (page.length < 200) return all;
    }
  }
}

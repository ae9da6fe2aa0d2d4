import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { Executor } from '../../src/graphql/executor.js';
import { DEFAULT_LIMITS } from '../../src/graphql/limits.js';
import { schema } from '../../src/graphql/schema/index.js';
import type { Principal } from '../../src/tokens/access-token.js';
import { DATABASE_KINDS } from '../support/databases.js';
import { buildProduct } from '../support/factories.js';
import { createTestRuntime, type TestRuntime } from '../support/runtime.js';
import { issueTestToken } from '../support/tokens.js';

const NESTED_PAGE = 'query ($offset: Int) { products(limit: 20, offset: $offset) { id name seller { name } reviews { rating } } }';

type Plans = { generic_plans: number; custom_plans: number };

for (const kind of DATABASE_KINDS) {
  // One connection, so the statements the Executor prepares are the ones this session can see.
  describe(`a page of a list, as PostgreSQL plans it [${kind}]`, () => {
    let test: TestRuntime;
    let executor: Executor;
    let principal: Principal;
    let productIds: number[];

    const run = async (offset: number | undefined) => {
      const result = await executor.run({ principal, source: NESTED_PAGE, variables: offset === undefined ? {} : { offset } });
      expect(result.errors).toBeUndefined();
      return (result.data as { products: { id: number; reviews: unknown[] }[] }).products;
    };

    /** Runs one page `times` times and returns the one statement it sent, with its last parameters. */
    const sentFor = async (offset: number | undefined, times: number) => {
      const sent: { query: string; params: unknown[] }[] = [];
      const stop = test.runtime.database.onQuery((query, params) => sent.push({ query, params }));
      try {
        for (let i = 0; i < times; i++) {
          const page = await run(offset);
          expect(page.map((product) => product.id)).toEqual(productIds.slice(offset ?? 0, (offset ?? 0) + 20));
          expect(page.every((product) => product.reviews.length === 2)).toBe(true);
        }
      } finally {
        stop();
      }
      expect(new Set(sent.map(({ query }) => query)).size).toBe(1);
      return sent.at(-1)!;
    };
    const statementOf = async (offset: number | undefined, times: number) => (await sentFor(offset, times)).query;

    const plansOf = async (text: string): Promise<Plans[]> => {
      const result = await test.runtime.db.execute(sql`select generic_plans::int, custom_plans::int from pg_prepared_statements where statement = ${text}`);
      return ((result as unknown as { rows?: Plans[] }).rows ?? (result as unknown as Plans[])).map((row) => ({ ...row }));
    };

    beforeAll(async () => {
      test = await createTestRuntime(kind, {}, { poolSize: 1 });
      const products = [];
      for (let i = 0; i < 30; i++) products.push(await buildProduct(test.runtime, { name: `Product ${i}`, reviews: 2 }));
      productIds = products.map((product) => product.id).sort((a, b) => a - b);
      ({ principal } = await issueTestToken(test.runtime));
      executor = new Executor({ schema, db: test.runtime.db, logger: test.runtime.logger, limits: DEFAULT_LIMITS });
      // PostgreSQL's own choice between a generic and a custom plan (the embedded start forces generic plans).
      await test.runtime.db.execute(sql`set plan_cache_mode = auto`);
    });

    afterAll(() => test.close());

    it('writes the page size into the statement, binds the offset and leaves a zero offset out', async () => {
      const first = await statementOf(undefined, 1);
      expect(first).toMatch(/ limit 20\) as "d0"/);
      expect(first).not.toMatch(/ offset /);
      expect(await statementOf(0, 1)).toBe(first);
      const later = await statementOf(7, 1);
      expect(later).toMatch(/ limit 20 offset \$\d+\) as "d0"/);
      expect(await statementOf(3, 1)).toBe(later);
    });

    it('earns one generic plan, where a bound page size was planned on every execution', async () => {
      for (const offset of [undefined, 5]) {
        const text = await statementOf(offset, 12);
        const [plans] = await plansOf(text);
        expect(plans!.generic_plans).toBeGreaterThan(0);
        expect(plans!.custom_plans).toBeLessThanOrEqual(5);
      }

      // The first page's statement with its page size bound, as Drizzle writes a number or a placeholder.
      const { query, params } = await sentFor(undefined, 1);
      expect(params.every((value) => Number.isInteger(value))).toBe(true);
      const bound = query.replace(/ limit 20\) as "d0"/, ` limit $${params.length + 1}) as "d0"`);
      expect(bound).not.toBe(query);
      await test.runtime.db.execute(sql.raw(`prepare bound_page_size as ${bound}`));
      try {
        for (let i = 0; i < 12; i++) await test.runtime.db.execute(sql.raw(`execute bound_page_size(${[...params, 20].join(', ')})`));
        expect(await plansOf(`prepare bound_page_size as ${bound}`)).toEqual([{ generic_plans: 0, custom_plans: 12 }]);
      } finally {
        await test.runtime.db.execute(sql`deallocate bound_page_size`).catch(() => undefined);
      }
    });
  });
}

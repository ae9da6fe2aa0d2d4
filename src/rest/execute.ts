/** Runs a REST request's GraphQL operation in-process, through the same service as /graphql. */
import { GraphQLError, type GraphQLSchema } from 'graphql';
import type { GraphQLService } from '../graphql/index.js';
import { operationCost } from '../graphql/limits.js';
import type { Principal } from '../tokens/access-token.js';
import { fromGraphQLErrors, RestInternal } from './errors.js';
import { OperationCache, type CompiledOperation, type OperationSpec } from './selection.js';
import type { ParsedFields } from './fields.js';
import { MAX_PAGE_SIZE } from './paging.js';

export class RestExecutor {
  readonly operations: OperationCache;
  private readonly byFields = new WeakMap<ParsedFields, Map<string, CompiledOperation>>();
  /** Per connection operation: the largest page size within the cost limit, 0 when not even one item fits. */
  private readonly pageBudgets = new WeakMap<CompiledOperation, number>();

  constructor(
    private readonly graphql: GraphQLService,
    options: { cacheSize?: number } = {},
  ) {
    this.operations = new OperationCache(options.cacheSize);
  }

  get schema(): GraphQLSchema {
    return this.graphql.schema;
  }

  operation(spec: Omit<OperationSpec, 'schema'>): CompiledOperation {
    return this.operations.get({ ...spec, schema: this.schema });
  }

  /** Built and looked up once per parsed field set (parseFields returns the same object for the same text). */
  routeOperation(route: string, fields: ParsedFields, spec: () => Omit<OperationSpec, 'schema' | 'route' | 'fields'>): CompiledOperation {
    let byRoute = this.byFields.get(fields);
    let operation = byRoute?.get(route);
    if (!operation) {
      operation = this.operation({ ...spec(), route, fields });
      if (!byRoute) this.byFields.set(fields, (byRoute = new Map()));
      byRoute.set(route, operation);
    }
    return operation;
  }

  /**
   * The page size to ask a connection operation for (AIP-158: a page may hold fewer items than requested): the
   * largest size up to `requested` whose cost fits GRAPHQL_MAX_COST, by the cost model the executor enforces. When
   * not even one item fits, `requested` is kept, so the executor refuses the request as it would anyway.
   */
  fittingPageSize(operation: CompiledOperation, requested: number): number {
    let budget = this.pageBudgets.get(operation);
    if (budget === undefined) {
      budget = this.largestFittingPage(operation);
      this.pageBudgets.set(operation, budget);
    }
    return budget === 0 ? requested : Math.min(requested, budget);
  }

  /** Bisects 1..MAX_PAGE_SIZE on the operation's cost as a function of `first`, which grows with the page size. */
  private largestFittingPage(operation: CompiledOperation): number {
    const { maxCost } = this.graphql.limits;
    const fits = (first: number): boolean => {
      try {
        return operationCost(this.schema, operation.document, { first }) <= maxCost;
      } catch (error) {
        // Not costed here: the executor's own check decides, on the page size asked for.
        if (error instanceof GraphQLError) return true;
        throw error;
      }
    };
    if (fits(MAX_PAGE_SIZE)) return MAX_PAGE_SIZE;
    let low = 0;
    let high = MAX_PAGE_SIZE;
    while (high - low > 1) {
      const middle = (low + high) >>> 1;
      if (fits(middle)) low = middle;
      else high = middle;
    }
    return low;
  }

  async run(operation: CompiledOperation, variables: Record<string, unknown>, principal: Principal, options: { pageLookahead?: boolean } = {}): Promise<unknown> {
    const result = await this.graphql.execute({
      document: operation.document,
      variables,
      operationName: operation.operationName,
      principal,
      ...options,
    });
    if (result.errors?.length) throw fromGraphQLErrors(result.errors, { dpop: principal.jkt !== undefined });
    const data = result.data as Record<string, unknown> | null | undefined;
    if (!data || !Object.hasOwn(data, operation.field)) throw new RestInternal('the GraphQL operation returned no data');
    return data[operation.field];
  }
}

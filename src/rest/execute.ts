/**
 * Runs a REST request's GraphQL operation in-process, through the same service (validation
 * cache, limits, authorization) as /graphql, and turns GraphQL errors into REST errors.
 */
import type { GraphQLSchema } from 'graphql';
import type { GraphQLService } from '../graphql/index.js';
import type { Principal } from '../tokens/access-token.js';
import { fromGraphQLErrors, RestInternal } from './errors.js';
import { OperationCache, type CompiledOperation, type OperationSpec } from './selection.js';
import type { ParsedFields } from './fields.js';

export class RestExecutor {
  /** Compiled documents by (route, normalized field set). */
  readonly operations: OperationCache;
  private readonly byFields = new WeakMap<ParsedFields, Map<string, CompiledOperation>>();

  constructor(
    private readonly graphql: GraphQLService,
    options: { cacheSize?: number } = {},
  ) {
    this.operations = new OperationCache(options.cacheSize);
  }

  /** The executable schema the REST allow-list is derived from. */
  get schema(): GraphQLSchema {
    return this.graphql.schema;
  }

  /** The operation for a route and field set (paths checked against the schema first). */
  operation(spec: Omit<OperationSpec, 'schema'>): CompiledOperation {
    return this.operations.get({ ...spec, schema: this.schema });
  }

  /**
   * As `operation`, for a route whose spec depends on nothing but `fields`: the spec is built and
   * looked up once per parsed field set (parseFields gives the same object for the same text).
   */
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

  /** Executes `operation` and returns the value of its root field; GraphQL errors become REST errors. */
  async run(operation: CompiledOperation, variables: Record<string, unknown>, principal: Principal, options: { pageLookahead?: boolean } = {}): Promise<unknown> {
    const result = await this.graphql.execute({
      document: operation.document,
      variables,
      operationName: operation.operationName,
      principal,
      ...options,
    });
    if (result.errors?.length) throw fromGraphQLErrors(result.errors);
    const data = result.data as Record<string, unknown> | null | undefined;
    if (!data || !Object.hasOwn(data, operation.field)) throw new RestInternal('the GraphQL operation returned no data');
    return data[operation.field];
  }
}

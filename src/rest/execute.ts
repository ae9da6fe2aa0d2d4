/** Runs a REST request's GraphQL operation in-process, through the same service as /graphql. */
import type { GraphQLSchema } from 'graphql';
import type { GraphQLService } from '../graphql/index.js';
import type { Principal } from '../tokens/access-token.js';
import { fromGraphQLErrors, RestInternal } from './errors.js';
import { OperationCache, type CompiledOperation, type OperationSpec } from './selection.js';
import type { ParsedFields } from './fields.js';

export class RestExecutor {
  readonly operations: OperationCache;
  private readonly byFields = new WeakMap<ParsedFields, Map<string, CompiledOperation>>();

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

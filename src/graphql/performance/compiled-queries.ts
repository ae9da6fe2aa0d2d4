/**
 * Queries compiled to JavaScript (issue #19): graphql-jit turns an operation into one function
 * that runs its resolvers without graphql-js' per-field work (argument maps, field collection,
 * completion dispatch). Only what graphql-jit does well and safely runs compiled; everything
 * else, and every result with an error, is graphql-js' as before:
 *
 * - queries only: mutations keep graphql-js' serial execution and the idempotency path;
 * - an operation is compiled on its second use, so one-off documents never cost a compile, and
 *   compiled operations are kept in an LRU by count, because compiled code is many times the
 *   size of the text the document cache is bounded by;
 * - documents that could steer the generated code are never compiled (`refusal` below);
 * - variables are checked by graphql-js first, so their errors are graphql-js' word for word;
 * - a compiled result with any error is thrown away and the operation runs again on graphql-js
 *   with a fresh context: its errors carry their original errors, so they are masked the same
 *   way. Queries only read, so running one twice is safe.
 *
 * graphql-jit is patched (patches/graphql-jit+0.8.9.patch) to hand resolvers one path link per
 * parent link and key, as graphql-js does: plugin-drizzle finds the plan that loaded a relation
 * through those links, and without them loads every relation with a query of its own.
 */
import { LRUCache } from 'lru-cache';
import {
  getVariableValues,
  visit,
  BREAK,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { Logger } from '../../logger.js';

export interface CompiledQueriesOptions {
  /** Compiled operations kept (an LRU by count). */
  max?: number;
  /** Uses of an operation before it is compiled. */
  compileAfterUses?: number;
}

/** What the Executor hands over per request. */
export interface CompiledRun<Context> {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  variables: Record<string, unknown> | undefined;
  /** A fresh context per execution: plugin-drizzle keys its per-request state on it. */
  context: () => Context;
}

export class CompiledQueries {
  /** Operations compiled, and operations graphql-js keeps because `refusal` or graphql-jit said no. */
  readonly stats = { compiled: 0, refused: 0 };
  private readonly compiled: LRUCache<OperationDefinitionNode, CompiledQuery>;
  private readonly uses = new WeakMap<OperationDefinitionNode, number>();
  /** Kept apart from the LRU, so documents that are never compiled cannot evict ones that are. */
  private readonly refused = new WeakSet<OperationDefinitionNode>();
  private readonly compileAfterUses: number;

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly logger: Logger,
    options: CompiledQueriesOptions = {},
  ) {
    this.compiled = new LRUCache({ max: options.max ?? 256 });
    this.compileAfterUses = options.compileAfterUses ?? 1;
  }

  /** Compiled operations kept now. */
  get size(): number {
    return this.compiled.size;
  }

  /**
   * Runs the operation compiled when it is worth it and safe, or returns undefined: the caller
   * then runs it on graphql-js. A compiled run that produced any error also returns undefined.
   */
  async run<Context>(run: CompiledRun<Context>): Promise<ExecutionResult | undefined> {
    const compiled = this.compiledFor(run.document, run.operation);
    if (!compiled) return undefined;
    const variables = run.variables ?? {};
    const checked = getVariableValues(this.schema, run.operation.variableDefinitions ?? [], variables, {
      maxErrors: 50,
      hideSuggestions: true,
    });
    if (checked.errors) return { errors: checked.errors };
    let result: ExecutionResult;
    try {
      result = await compiled.query(undefined, run.context(), variables);
    } catch (error) {
      // Resolver errors end up in `errors`; a throw is graphql-jit's own failure.
      this.logger.warn({ err: error }, 'compiled query failed; running it on graphql-js');
      return undefined;
    }
    return result.errors ? undefined : result;
  }

  /** The operation's compiled form, compiling it on the use that earns it. */
  private compiledFor(document: DocumentNode, operation: OperationDefinitionNode): CompiledQuery | undefined {
    if (operation.operation !== 'query' || this.refused.has(operation)) return undefined;
    const found = this.compiled.get(operation);
    if (found) return found;
    const uses = (this.uses.get(operation) ?? 0) + 1;
    if (uses <= this.compileAfterUses) {
      this.uses.set(operation, uses);
      return undefined;
    }
    this.uses.delete(operation);
    const compiled = this.compile(document, operation);
    if (compiled) this.compiled.set(operation, compiled);
    else this.refused.add(operation);
    return compiled;
  }

  private compile(document: DocumentNode, operation: OperationDefinitionNode): CompiledQuery | undefined {
    if (refusal(document) !== undefined) {
      this.stats.refused++;
      return undefined;
    }
    // graphql-jit writes onto the nodes it compiles; the cached document stays graphql-js' own.
    const result = compileQuery(this.schema, copyNodes(document), operation.name?.value);
    if (!isCompiledQuery(result)) {
      this.stats.refused++;
      return undefined;
    }
    this.stats.compiled++;
    return result;
  }
}

/** A copy of an AST's nodes; locations are never written to, so they are shared. */
function copyNodes<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copyNodes) as T;
  if (typeof value !== 'object' || value === null) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) copy[key] = key === 'loc' ? field : copyNodes(field);
  return copy as T;
}

const GRAPHQL_NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;
/** Number literals as the GraphQL grammar writes them. */
const INT_LITERAL = /^-?(0|[1-9][0-9]*)$/;
const FLOAT_LITERAL = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;
/** graphql-jit's names for list indices in generated code (`idx0`, `idx1`, …). */
const INDEX_NAME = /^idx\d+$/;
/** The prefix of the markers graphql-jit replaces with code in the argument literals it writes. */
const CODE_MARKER = '__MAGIC_';

/**
 * Why a document must not be compiled, or undefined when it may. graphql-jit writes parts of a
 * document into the code it generates, so only documents whose parts cannot steer that code:
 *
 * - every name a GraphQL name, and every literal shaped as the parser makes it (the REST layer
 *   builds ASTs that are never re-parsed; `ID` keeps an Int literal's text as a string, and
 *   graphql-jit writes `if: true` as it finds it);
 * - no string holding graphql-jit's value markers: it writes argument literals with
 *   `JSON.stringify` and then turns marker strings into code (`new Date(…)`), so a string
 *   holding one could leave its quotes and run in the server;
 * - no variable named like a property every object inherits (`__proto__`, `constructor`…):
 *   graphql-jit assigns coerced variables onto a plain object, where `__proto__` would set the
 *   prototype and the variable vanish (its arguments falling back to their defaults, past the
 *   cost the client's value was checked at);
 * - response keys without `_` (but `__typename`) that are not list-index names: graphql-jit
 *   names each field's resolve info by its response path joined with `_`, so two paths could
 *   share a name and a resolver be handed another field's info — and `__proto__` would be an
 *   object literal's prototype in generated code.
 */
export function refusal(document: DocumentNode): string | undefined {
  let reason: string | undefined;
  const refuse = (why: string | false) => {
    if (why === false) return undefined;
    reason = why;
    return BREAK;
  };
  visit(document, {
    Name: (node) => refuse(!GRAPHQL_NAME.test(node.value) && `name ${JSON.stringify(node.value)} is not a GraphQL name`),
    EnumValue: (node) => refuse(!GRAPHQL_NAME.test(node.value) && `enum value ${JSON.stringify(node.value)} is not a GraphQL name`),
    IntValue: (node) => refuse(!INT_LITERAL.test(node.value) && `Int literal ${JSON.stringify(node.value)}`),
    FloatValue: (node) => refuse(!FLOAT_LITERAL.test(node.value) && `Float literal ${JSON.stringify(node.value)}`),
    BooleanValue: (node) => refuse(typeof node.value !== 'boolean' && `Boolean literal ${JSON.stringify(node.value)}`),
    VariableDefinition: (node) => refuse(node.variable.name.value in Object.prototype && `variable $${node.variable.name.value}`),
    StringValue: (node) => refuse(node.value.includes(CODE_MARKER) && `a string holds ${CODE_MARKER}`),
    Field(node) {
      const key = node.alias?.value ?? node.name.value;
      const typename = !node.alias && key === '__typename';
      return refuse(!typename && (key.includes('_') || INDEX_NAME.test(key)) && `response key ${key}`);
    },
  });
  return reason;
}

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
 * - documents that could steer the generated code are never compiled (`refusal` below), nor
 *   ones whose @skip/@include graphql-jit would decide otherwise than graphql-js;
 * - variables are checked by graphql-js first, so their errors are graphql-js' word for word;
 * - a compiled result with any error is thrown away and the operation runs again on graphql-js
 *   with a fresh context: its errors carry their original errors, so they are masked the same
 *   way. Queries only read, so running one twice is safe. Not when the database timed out or is
 *   away: that answer stands, rather than doubling the load.
 *
 * graphql-jit is patched (patches/graphql-jit+0.8.9.patch) to hand resolvers one path link per
 * parent link and key, as graphql-js does: plugin-drizzle finds the plan that loaded a relation
 * through those links, and without them loads every relation with a query of its own. The patch
 * also builds a resolver's `info.path` only when it is read, and reads an exposed column straight
 * from its row (`JIT_OPTIONS` below).
 */
import { LRUCache } from 'lru-cache';
import {
  getVariableValues,
  visit,
  BREAK,
  Kind,
  type DocumentNode,
  type ExecutionResult,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { Logger } from '../../logger.js';
import { isDatabaseUnavailable, isStatementTimeout } from '../../db/errors.js';

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

/** An operation's compiled form. */
interface Compiled {
  query: CompiledQuery;
  /**
   * Variables that steer an @skip or @include and may be null: graphql-jit would skip their
   * fields, where graphql-js answers that `if` must not be null, so a run with one null is
   * graphql-js'.
   */
  nullableConditions: readonly string[];
}

export class CompiledQueries {
  /** Operations compiled, and operations graphql-js keeps because `refusal` or graphql-jit said no. */
  readonly stats = { compiled: 0, refused: 0 };
  private readonly compiled: LRUCache<OperationDefinitionNode, Compiled>;
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
    if (compiled.nullableConditions.some((name) => checked.coerced[name] === null)) return undefined;
    let result: ExecutionResult;
    try {
      result = await compiled.query.query(undefined, run.context(), variables);
    } catch (error) {
      // Resolver errors end up in `errors`; a throw is graphql-jit's own failure.
      this.logger.warn({ err: error }, 'compiled query failed; running it on graphql-js');
      return undefined;
    }
    // A statement cancelled at its timeout, or a database away: running the query again on graphql-js would double the
    // load just when the database is struggling (and the wait, for a timeout). The compiled answer stands; its errors are
    // masked as graphql-js' would be.
    if (result.errors?.some((error) => isStatementTimeout(error.originalError) || isDatabaseUnavailable(error.originalError))) return result;
    return result.errors ? undefined : result;
  }

  /** The operation's compiled form, compiling it on the use that earns it. */
  private compiledFor(document: DocumentNode, operation: OperationDefinitionNode): Compiled | undefined {
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

  private compile(document: DocumentNode, operation: OperationDefinitionNode): Compiled | undefined {
    if (refusal(document) !== undefined) {
      this.stats.refused++;
      return undefined;
    }
    // graphql-jit writes onto the nodes it compiles; the cached document stays graphql-js' own.
    const result = compileQuery(this.schema, copyNodes(document), operation.name?.value, JIT_OPTIONS);
    if (!isCompiledQuery(result)) {
      this.stats.refused++;
      return undefined;
    }
    this.stats.compiled++;
    return { query: result, nullableConditions: nullableConditions(operation, document) };
  }
}

/**
 * The row property an exposed column's resolver returns when the row has it, which plugin-drizzle (patched) says on the
 * resolver: graphql-jit (patched) compiles such a field as a read of the property and calls the resolver only for a row
 * without it. Said only when nothing wraps plugin-drizzle's resolver, so no other plugin's work is skipped.
 */
const COLUMN_PROPERTY = Symbol.for('pothos-drizzle.columnProperty');
const JIT_OPTIONS = {
  propertyRead: (field: GraphQLField<unknown, unknown>): string | undefined =>
    (field.resolve as { [COLUMN_PROPERTY]?: string } | undefined)?.[COLUMN_PROPERTY],
};

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
 *   object literal's prototype in generated code;
 * - no @skip or @include where graphql-jit would select otherwise than graphql-js (see
 *   `conditionalRefusal`).
 */
export function refusal(document: DocumentNode): string | undefined {
  return syntaxRefusal(document) ?? conditionalRefusal(document);
}

function syntaxRefusal(document: DocumentNode): string | undefined {
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

/**
 * graphql-jit decides @skip and @include once per field node at compile time, where graphql-js
 * decides them per selection as it collects fields, and the two part ways wherever a selection
 * set holds a response key twice or a fragment is spread twice:
 *
 * - graphql-jit places a response key where it first appears, even when that appearance is
 *   skipped and a later one is not, so the JSON keys come in another order than graphql-js';
 * - graphql-jit marks a fragment visited even where its spread is skipped, so a later spread
 *   of it selects nothing, where graphql-js selects its fields;
 * - graphql-jit selects a field's subfields from every node of the field, skipped or not;
 * - graphql-jit writes a fragment field's conditions onto the field node itself, which every
 *   spread of the fragment shares, so one spread's condition also holds at the others.
 *
 * So a document with either directive compiles only if no selection set, fragments expanded,
 * holds a response key twice, and no fragment is spread more than once in it (which also keeps
 * the walk below linear in the document). graphql-jit also skips a field whose condition is a
 * variable sent as null, which graphql-js refuses: runs with one are graphql-js', see
 * `nullableConditions`.
 */
function conditionalRefusal(document: DocumentNode): string | undefined {
  let conditional = false;
  const spreads = new Map<string, number>();
  const fragments = new Map<string, FragmentDefinitionNode>();
  visit(document, {
    Directive(node) {
      if (node.name.value === 'skip' || node.name.value === 'include') conditional = true;
    },
    FragmentSpread(node) {
      spreads.set(node.name.value, (spreads.get(node.name.value) ?? 0) + 1);
    },
    FragmentDefinition(node) {
      fragments.set(node.name.value, node);
    },
  });
  if (!conditional) return undefined;
  for (const [name, count] of spreads) if (count > 1) return `@skip or @include, and fragment ${name} spread ${count} times`;
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    const key = repeatedKey(definition.selectionSet, fragments, new Set());
    if (key !== undefined) return `@skip or @include, and response key ${key} selected twice in one selection set`;
  }
  return undefined;
}

/**
 * A response key the selection set (fragments expanded) selects twice, at any depth, or
 * undefined. `expanding` holds the fragments being expanded, so a cycle ends the walk.
 */
function repeatedKey(
  selectionSet: SelectionSetNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  expanding: ReadonlySet<string>,
): string | undefined {
  const subselections = new Map<string, { set: SelectionSetNode | undefined; within: ReadonlySet<string> }>();
  const collect = (set: SelectionSetNode, within: ReadonlySet<string>): string | undefined => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        const key = selection.alias?.value ?? selection.name.value;
        if (subselections.has(key)) return key;
        subselections.set(key, { set: selection.selectionSet, within });
        continue;
      }
      if (selection.kind === Kind.INLINE_FRAGMENT) {
        const repeated = collect(selection.selectionSet, within);
        if (repeated !== undefined) return repeated;
        continue;
      }
      const name = selection.name.value;
      const fragment = fragments.get(name);
      if (within.has(name)) return `…${name}`;
      if (!fragment) continue;
      const repeated = collect(fragment.selectionSet, new Set([...within, name]));
      if (repeated !== undefined) return repeated;
    }
    return undefined;
  };
  const repeated = collect(selectionSet, expanding);
  if (repeated !== undefined) return repeated;
  for (const { set, within } of subselections.values()) {
    if (!set) continue;
    const repeated = repeatedKey(set, fragments, within);
    if (repeated !== undefined) return repeated;
  }
  return undefined;
}

/**
 * The operation's variables that are the `if` of an @skip or @include and may be null: declared
 * nullable, which validation allows there when they have a default (`$if: Boolean = true`).
 * Fragments the operation spreads can use them too, so every condition in the document counts.
 */
function nullableConditions(operation: OperationDefinitionNode, document: DocumentNode): string[] {
  const nullable = new Set(
    (operation.variableDefinitions ?? []).filter((definition) => definition.type.kind !== Kind.NON_NULL_TYPE).map((definition) => definition.variable.name.value),
  );
  if (nullable.size === 0) return [];
  const conditions = new Set<string>();
  visit(document, {
    Directive(node) {
      if (node.name.value !== 'skip' && node.name.value !== 'include') return;
      const condition = node.arguments?.find((argument) => argument.name.value === 'if')?.value;
      if (condition?.kind === Kind.VARIABLE && nullable.has(condition.name.value)) conditions.add(condition.name.value);
    },
  });
  return [...conditions];
}

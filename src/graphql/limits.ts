/**
 * Abuse limits, each refused with 400 INVALID_ARGUMENT (`extensions.reason` names it) before a
 * resolver runs: tokens while parsing (graphql-js `maxTokens`), depth, aliases and directives by
 * graphql-armor's rules (cached with the validation), cost by @pothos/plugin-complexity per
 * request (it depends on variables), and no field suggestions. Values: src/policy.ts.
 */
import { ApolloArmor } from '@escape.tech/graphql-armor';
import type { GraphQLArmorConfig } from '@escape.tech/graphql-armor-types';
import { complexityFromQuery } from '@pothos/plugin-complexity';
import {
  GraphQLError,
  Kind,
  parse,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import type { GraphQLLimits } from '../config.js';
import { rejectRequest, type RequestRejection } from './errors.js';

export { DEFAULT_LIMITS, LIMIT_VARIABLES, loadLimits, type GraphQLLimits } from '../config.js';

/** Parses with the token limit; a syntax error or too many tokens is a 400. */
export function parseWithLimits(source: string, limits: GraphQLLimits): DocumentNode {
  try {
    return parse(source, { maxTokens: limits.maxTokens });
  } catch (error) {
    if (!(error instanceof GraphQLError)) throw error;
    const tooLong = /contains more th[ae][nt] \d+ tokens/.test(error.message);
    throw tooLong
      ? rejectRequest('MAX_TOKENS', `the document has more than ${limits.maxTokens} tokens`, { extensions: { max: limits.maxTokens } })
      : rejectRequest('GRAPHQL_PARSE_FAILED', error.message, { locatedAt: error });
  }
}

/** graphql-armor's depth, alias and directive rules, reporting each refusal as a validation error. */
export function limitRules(limits: GraphQLLimits): ValidationRule[] {
  const report = (reason: RequestRejection, max: number) => ({
    n: max,
    // Report instead of throwing, so the refusal is an ordinary (cacheable) validation error.
    propagateOnRejection: false,
    onReject: [
      (context: ValidationContext | null, error: GraphQLError) =>
        context?.reportError(rejectRequest(reason, error.message.replace(/^Syntax Error: /, ''), { extensions: { max } })),
    ],
  });
  const config: GraphQLArmorConfig = {
    maxDepth: { ...report('MAX_DEPTH', limits.maxDepth), flattenFragments: true, ignoreIntrospection: true },
    maxAliases: report('MAX_ALIASES', limits.maxAliases),
    maxDirectives: report('MAX_DIRECTIVES', limits.maxDirectives),
    // Cost is @pothos/plugin-complexity's (argument-aware); tokens and suggestions are graphql-js' own.
    costLimit: { enabled: false },
    maxTokens: { enabled: false },
    blockFieldSuggestion: { enabled: false },
  };
  // ApolloArmor is graphql-armor's entry point that hands out plain graphql-js validation rules.
  return new ApolloArmor(config).protect().validationRules;
}

/**
 * The cost check of one operation. The cost depends on variables only through the arguments
 * of fields whose cost is a function (the list limits); the costs are memoized by the values
 * of just those variables, so repeated shapes cost a map lookup.
 */
export class CostCheck {
  private readonly costDocument: DocumentNode;
  /** Variables the cost depends on; empty when it is a constant of the document. */
  private readonly costVariables: readonly string[];
  private readonly memo = new Map<string, number>();

  constructor(
    private readonly schema: GraphQLSchema,
    document: DocumentNode,
    operation: OperationDefinitionNode,
    private readonly limits: GraphQLLimits,
  ) {
    const fragments = document.definitions.filter((definition) => definition.kind === Kind.FRAGMENT_DEFINITION);
    this.costDocument = { kind: Kind.DOCUMENT, definitions: [operation, ...fragments] };
    this.costVariables = costVariables(schema, this.costDocument);
  }

  /** Throws MAX_COST when the operation with these variables costs more than the limit; returns the cost. */
  check(variables: Record<string, unknown> | undefined, context: object): number | undefined {
    const key = memoKey(this.costVariables, variables);
    let cost = key === undefined ? undefined : this.memo.get(key);
    if (cost === undefined) {
      try {
        cost = operationCost(this.schema, this.costDocument, variables ?? {}, context);
      } catch (error) {
        // Variables that do not coerce are left for execution to report.
        if (error instanceof GraphQLError) return undefined;
        throw error;
      }
      if (key !== undefined) {
        if (this.memo.size >= MAX_MEMOIZED_COSTS) this.memo.clear();
        this.memo.set(key, cost);
      }
    }
    if (cost > this.limits.maxCost) {
      throw rejectRequest('MAX_COST', `the query costs ${cost}, more than the limit of ${this.limits.maxCost}; ask for fewer items or fields`, {
        extensions: { cost, max: this.limits.maxCost },
      });
    }
    return cost;
  }
}

const MAX_MEMOIZED_COSTS = 256;

/**
 * What a document (one operation and its fragments) costs with these variables: the cost `CostCheck`
 * enforces, with no limit applied. Throws graphql-js' GraphQLError for variables that do not coerce.
 *
 * @example
 *   operationCost(schema, parse('query($first: Int) { productsConnection(first: $first) { nodes { id } } }'), { first: 10 });
 */
export function operationCost(schema: GraphQLSchema, document: DocumentNode, variables: Record<string, unknown> = {}, context: object = {}): number {
  return complexityFromQuery(document, { schema, ctx: context, variables }).complexity;
}

/**
 * The memo key of the cost variables' values, or undefined when one is an object or a list:
 * those are costed afresh rather than serialized (a deeply nested one would overflow the
 * stack). A missing variable takes its declared default and a null one the argument's, so the
 * two never share a key; strings are length-prefixed, so no value can mimic a separator.
 */
function memoKey(names: readonly string[], variables: Record<string, unknown> | undefined): string | undefined {
  let key = '';
  for (const name of names) {
    const value = variables !== undefined && Object.hasOwn(variables, name) ? variables[name] : undefined;
    if (value === undefined) key += 'u;';
    else if (value === null) key += 'n;';
    else if (typeof value === 'string') key += `s${value.length}:${value};`;
    else if (typeof value === 'number' || typeof value === 'boolean') key += `${typeof value}:${value};`;
    else return undefined;
  }
  return key;
}

/** Names of the variables passed to arguments of fields whose cost is computed from arguments. */
function costVariables(schema: GraphQLSchema, document: DocumentNode): string[] {
  const names = new Set<string>();
  const typeInfo = new TypeInfo(schema);
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Argument(node) {
        const field = typeInfo.getFieldDef();
        if (typeof field?.extensions?.complexity !== 'function') return;
        visit(node.value, { Variable: (variable) => void names.add(variable.name.value) });
      },
    }),
  );
  return [...names].sort();
}

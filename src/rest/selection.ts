/**
 * `fields` trees to GraphQL operations and results back. The allow-list is the schema itself, so REST never names
 * more than GraphQL serves; documents are built as AST, so nothing the client wrote is pasted into query text.
 */
import {
  GraphQLEnumType,
  GraphQLList,
  GraphQLNonNull,
  Kind,
  OperationTypeNode,
  getNamedType,
  getNullableType,
  isEnumType,
  isListType,
  isInterfaceType,
  isObjectType,
  isRequiredArgument,
  isUnionType,
  type DocumentNode,
  type FieldNode,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLObjectType,
  type GraphQLSchema,
  type SelectionSetNode,
  type TypeNode,
} from 'graphql';
import { LRUCache } from 'lru-cache';
import { fieldScopes } from '../graphql/scopes.js';
import { FieldsError, merge, printFields, WHOLE, type FieldTree, type ParsedFields } from './fields.js';

export interface Selection {
  type: GraphQLObjectType;
  fields: Map<string, SelectedField>;
}

export interface SelectedField {
  field: GraphQLField<unknown, unknown>;
  selection: Selection | undefined;
  /** Enum values are UPPER_CASE in GraphQL and lower case in REST. */
  enumType: GraphQLEnumType | undefined;
}

const allowedCache = new WeakMap<GraphQLObjectType, Map<string, GraphQLField<unknown, unknown>>>();

export function allowedFields(type: GraphQLObjectType): Map<string, GraphQLField<unknown, unknown>> {
  let allowed = allowedCache.get(type);
  if (!allowed) {
    allowed = new Map();
    for (const field of Object.values(type.getFields())) {
      if (field.name.startsWith('__')) continue;
      if (field.args.some(isRequiredArgument)) continue;
      const named = getNamedType(field.type);
      // Interfaces and unions would need fragments; nothing in our schema returns one.
      if (isInterfaceType(named) || isUnionType(named)) continue;
      allowed.set(field.name, field);
    }
    allowedCache.set(type, allowed);
  }
  return allowed;
}

export function checkPaths(root: GraphQLObjectType, paths: string[][], parameter = 'fields'): void {
  for (const path of paths) {
    let type = root;
    for (let i = 0; i < path.length; i++) {
      const name = path[i]!;
      if (name === '*') break;
      const written = path.slice(0, i + 1).join('.');
      const field = allowedFields(type).get(name);
      if (!field) {
        throw new FieldsError(
          i === 0
            ? `${parameter}: '${name}' is not a field of ${type.name}`
            : `${parameter}: '${written}' is not a field (${type.name} has no field '${name}')`,
          { reason: 'UNKNOWN_FIELD', metadata: { parameter, path: written } },
        );
      }
      const named = getNamedType(field.type);
      if (i < path.length - 1) {
        const next = path[i + 1]!;
        if (!isObjectType(named)) {
          throw new FieldsError(`${parameter}: '${written}' has no subfields, so '${written}.${next}' is not a field`);
        }
        type = named;
      }
    }
  }
}

/**
 * Every field of `type`, leaving out cycles and fields needing a scope outside `scopes` (a default response needs
 * only the route's scope), and objects inside nested lists, which multiply a page's cost by the list's size.
 */
function expandWhole(
  type: GraphQLObjectType,
  ancestors: ReadonlySet<GraphQLObjectType>,
  scopes: ReadonlySet<string>,
  leavesOnly = false,
): Selection {
  const inside = new Set(ancestors).add(type);
  const fields = new Map<string, SelectedField>();
  for (const [name, field] of allowedFields(type)) {
    if (fieldScopes(field).some((scope) => !scopes.has(scope))) continue;
    const named = getNamedType(field.type);
    if (isObjectType(named)) {
      if (leavesOnly || inside.has(named)) continue;
      const list = isListType(getNullableType(field.type));
      fields.set(name, { field, selection: expandWhole(named, inside, scopes, list), enumType: undefined });
    } else {
      fields.set(name, { field, selection: undefined, enumType: isEnumType(named) ? named : undefined });
    }
  }
  return { type, fields };
}

/** A field named explicitly adds its own scopes for what is expanded below it. */
export function resolveSelection(
  type: GraphQLObjectType,
  tree: FieldTree,
  ancestors: ReadonlySet<GraphQLObjectType> = new Set(),
  scopes: ReadonlySet<string> = new Set(),
): Selection {
  if (tree === WHOLE) return expandWhole(type, ancestors, scopes);
  const inside = new Set(ancestors).add(type);
  const allowed = allowedFields(type);
  for (const name of tree.keys()) {
    if (!allowed.has(name)) throw new FieldsError(`fields: '${name}' is not a field of ${type.name}`, { reason: 'UNKNOWN_FIELD', metadata: { parameter: 'fields', path: name } });
  }
  // In the schema's order, not as written: the compiled operation is shared by every spelling of the same fields
  // (OperationCache keys them sorted), so the written order would be that of whichever request compiled it first,
  // and the same request would get other bytes, and another ETag, from another instance or after an eviction.
  const fields = new Map<string, SelectedField>();
  for (const [name, field] of allowed) {
    const subtree = tree.get(name);
    if (subtree === undefined) continue;
    const named = getNamedType(field.type);
    if (isObjectType(named)) {
      fields.set(name, { field, selection: resolveSelection(named, subtree, inside, new Set([...scopes, ...fieldScopes(field)])), enumType: undefined });
    } else {
      if (subtree !== WHOLE) throw new FieldsError(`fields: '${name}' has no subfields`);
      fields.set(name, { field, selection: undefined, enumType: isEnumType(named) ? named : undefined });
    }
  }
  return { type, fields };
}

export function selectionSetOf(selection: Selection): SelectionSetNode {
  const selections: FieldNode[] = [...selection.fields.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, selected]) => ({
      kind: Kind.FIELD,
      name: { kind: Kind.NAME, value: name },
      ...(selected.selection ? { selectionSet: selectionSetOf(selected.selection) } : {}),
    }));
  return { kind: Kind.SELECTION_SET, selections };
}

export function project(value: unknown, selection: Selection): unknown {
  if (value === null || value === undefined) return null;
  if (Array.isArray(value)) return value.map((item) => project(item, selection));
  const source = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [name, selected] of selection.fields) {
    const fieldValue = source[name] ?? null;
    if (selected.selection) out[name] = project(fieldValue, selected.selection);
    else if (selected.enumType) out[name] = lowerEnum(fieldValue);
    else out[name] = fieldValue;
  }
  return out;
}

function lowerEnum(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(lowerEnum);
  return typeof value === 'string' ? value.toLowerCase() : value;
}

export function enumValueFromRest(type: GraphQLEnumType, value: string): string | undefined {
  if (value !== value.toLowerCase()) return undefined;
  return type.getValues().find((candidate) => candidate.name.toLowerCase() === value)?.name;
}

export function typeNodeOf(type: GraphQLInputType): TypeNode {
  if (type instanceof GraphQLNonNull) return { kind: Kind.NON_NULL_TYPE, type: typeNodeOf(type.ofType) as never };
  if (type instanceof GraphQLList) return { kind: Kind.LIST_TYPE, type: typeNodeOf(type.ofType) };
  return { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: type.name } };
}

export interface OperationSpec {
  route: string;
  schema: GraphQLSchema;
  operation: 'query' | 'mutation';
  field: string;
  args: readonly string[];
  fields: ParsedFields;
  internal?: FieldTree;
  connection?: boolean;
}

export interface CompiledOperation {
  document: DocumentNode;
  operationName: string;
  field: string;
  type: GraphQLObjectType;
  /** Every scope the requested fields need, the root field's included (a stored answer replayed for them must check these). */
  scopes: ReadonlySet<string>;
  project(value: unknown): unknown;
}

function addScopesOf(selection: Selection, into: Set<string>): Set<string> {
  for (const { field, selection: inner } of selection.fields.values()) {
    for (const scope of fieldScopes(field)) into.add(scope);
    if (inner) addScopesOf(inner, into);
  }
  return into;
}

export function rootField(schema: GraphQLSchema, operation: 'query' | 'mutation', name: string): GraphQLField<unknown, unknown> {
  const root = operation === 'query' ? schema.getQueryType() : schema.getMutationType();
  const field = root?.getFields()[name];
  if (!field) throw new Error(`the GraphQL schema has no ${operation} field ${name}`);
  return field;
}

export function rootFieldType(schema: GraphQLSchema, operation: 'query' | 'mutation', name: string): GraphQLObjectType {
  const type = getNamedType(rootField(schema, operation, name).type);
  if (!isObjectType(type)) throw new Error(`${operation} field ${name} does not return an object type`);
  return type;
}

function itemType(spec: OperationSpec): GraphQLObjectType {
  const type = rootFieldType(spec.schema, spec.operation, spec.field);
  if (!spec.connection) return type;
  const nodes = type.getFields().nodes;
  const node = nodes && getNamedType(nodes.type);
  if (!node || !isObjectType(node)) throw new Error(`${spec.field} is not a connection with nodes`);
  return node;
}

const field = (name: string, selectionSet?: SelectionSetNode): FieldNode => ({
  kind: Kind.FIELD,
  name: { kind: Kind.NAME, value: name },
  ...(selectionSet && { selectionSet }),
});

function connectionSelection(nodes: SelectionSetNode): SelectionSetNode {
  return {
    kind: Kind.SELECTION_SET,
    selections: [field('nodes', nodes), field('pageInfo', { kind: Kind.SELECTION_SET, selections: [field('endCursor'), field('hasNextPage')] })],
  };
}

function compile(spec: OperationSpec): CompiledOperation {
  const root = rootField(spec.schema, spec.operation, spec.field);
  const type = itemType(spec);
  const scopes = new Set([...fieldScopes(root)]);
  const requested = resolveSelection(type, spec.fields.tree, new Set(), scopes);
  const selected = spec.internal ? resolveSelection(type, merge(spec.fields.tree, spec.internal), new Set(), scopes) : requested;
  const operationName = `Rest_${spec.route.replace(/[^A-Za-z0-9_]/g, '_')}`;
  const variableDefinitions = spec.args.map((name) => {
    const arg = root.args.find((candidate) => candidate.name === name);
    if (!arg) throw new Error(`${spec.operation} field ${spec.field} has no argument ${name}`);
    return {
      kind: Kind.VARIABLE_DEFINITION,
      variable: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: name } },
      type: typeNodeOf(arg.type),
    } as const;
  });
  const document: DocumentNode = {
    kind: Kind.DOCUMENT,
    definitions: [
      {
        kind: Kind.OPERATION_DEFINITION,
        operation: spec.operation === 'query' ? OperationTypeNode.QUERY : OperationTypeNode.MUTATION,
        name: { kind: Kind.NAME, value: operationName },
        variableDefinitions,
        selectionSet: {
          kind: Kind.SELECTION_SET,
          selections: [
            {
              kind: Kind.FIELD,
              name: { kind: Kind.NAME, value: spec.field },
              arguments: spec.args.map((name) => ({
                kind: Kind.ARGUMENT,
                name: { kind: Kind.NAME, value: name },
                value: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: name } },
              })),
              selectionSet: spec.connection ? connectionSelection(selectionSetOf(selected)) : selectionSetOf(selected),
            },
          ],
        },
      },
    ],
  };
  return { document, operationName, field: spec.field, type, scopes: addScopesOf(requested, new Set(scopes)), project: (value) => project(value, requested) };
}

export class OperationCache {
  private readonly cache: LRUCache<string, CompiledOperation>;
  private readonly schemas = new WeakMap<GraphQLSchema, number>();
  private schemaCount = 0;
  private readonly checked = new WeakMap<ParsedFields, WeakSet<GraphQLObjectType>>();
  private readonly printed = new WeakMap<Exclude<FieldTree, typeof WHOLE>, string>();

  constructor(max = 500) {
    this.cache = new LRUCache({ max });
  }

  get size(): number {
    return this.cache.size;
  }

  /** Paths are checked on a hit too: different paths can normalize to one tree. */
  get(spec: OperationSpec): CompiledOperation {
    const type = itemType(spec);
    let checkedFor = this.checked.get(spec.fields);
    if (!checkedFor?.has(type)) {
      checkPaths(type, spec.fields.paths);
      if (!checkedFor) this.checked.set(spec.fields, (checkedFor = new WeakSet()));
      checkedFor.add(type);
    }
    const internal = spec.internal ? this.print(spec.internal) : '';
    const key = [this.schemaKey(spec.schema), spec.route, spec.operation, spec.field, spec.args.join(','), internal, this.print(spec.fields.tree), spec.connection ? 'connection' : ''].join('\u0000');
    let compiled = this.cache.get(key);
    if (!compiled) {
      compiled = compile(spec);
      this.cache.set(key, compiled);
    }
    return compiled;
  }

  private print(tree: FieldTree): string {
    if (tree === WHOLE) return printFields(tree);
    let text = this.printed.get(tree);
    if (text === undefined) {
      text = printFields(tree);
      this.printed.set(tree, text);
    }
    return text;
  }

  private schemaKey(schema: GraphQLSchema): number {
    let id = this.schemas.get(schema);
    if (id === undefined) {
      id = ++this.schemaCount;
      this.schemas.set(schema, id);
    }
    return id;
  }
}

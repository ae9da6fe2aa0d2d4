/**
 * OAuth scopes in the schema. A field or type declares the scope it needs in its
 * `extensions`; before executing, `requiredScopes` walks the validated operation and collects
 * every scope its selection touches, so a missing scope fails the whole request with 403 and
 * an RFC 6750 `insufficient_scope` challenge instead of nulling fields one by one.
 *
 * @example
 *   builder.queryField('orders', (t) => t.drizzleField({ extensions: needsScope('orders:read'), … }));
 */
import {
  getNamedType,
  isObjectType,
  isInterfaceType,
  Kind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { Scope } from '../oauth/scopes.js';

const SCOPE_KEY = 'requiredScope';

/** The `extensions` of a field (or a whole type) that needs `scope`. */
export function needsScope(scope: Scope): { [SCOPE_KEY]: Scope } {
  return { [SCOPE_KEY]: scope };
}

function scopeOf(extensions: Readonly<Record<string, unknown>> | null | undefined): string | undefined {
  const scope = extensions?.[SCOPE_KEY];
  return typeof scope === 'string' ? scope : undefined;
}

/**
 * The scopes selecting `field` needs by itself: its own and its type's (e.g. an order item's
 * `product` needs products:read because Product does).
 */
export function fieldScopes(field: Pick<GraphQLField<unknown, unknown>, 'extensions' | 'type'>): string[] {
  return [scopeOf(field.extensions), scopeOf(getNamedType(field.type).extensions)].filter((scope): scope is string => scope !== undefined);
}

/**
 * Every scope the operation needs, sorted. Fields under `@skip`/`@include` count whatever the
 * variables say: the answer depends only on the document, so it is computed once per cached
 * operation.
 */
export function requiredScopes(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): string[] {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const scopes = new Set<string>();
  const visited = new Set<string>();
  const walk = (selectionSet: SelectionSetNode, parentType: GraphQLNamedType) => {
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        if (!isObjectType(parentType) && !isInterfaceType(parentType)) continue;
        const field = parentType.getFields()[selection.name.value];
        // Introspection fields (__typename, __schema, __type) need only a valid token.
        if (!field) continue;
        const fieldScope = scopeOf(field.extensions);
        if (fieldScope) scopes.add(fieldScope);
        const type = getNamedType(field.type);
        const typeScope = scopeOf(type.extensions);
        if (typeScope) scopes.add(typeScope);
        if (selection.selectionSet) walk(selection.selectionSet, type);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const type = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : parentType;
        if (type) walk(selection.selectionSet, type);
      } else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        if (!fragment || visited.has(name)) continue;
        visited.add(name);
        const type = schema.getType(fragment.typeCondition.name.value);
        if (type) walk(fragment.selectionSet, type);
      }
    }
  };
  const root = schema.getRootType(operation.operation);
  if (root) walk(operation.selectionSet, root);
  return [...scopes].sort();
}

/**
 * `update_mask` (AIP-134, AIP-161): only fields both masked and in the body change; masked output-only fields are
 * ignored (AIP-203), so sending back a resource just read is a no-op.
 */
import {
  coerceInputValue,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isNonNullType,
  type GraphQLInputField,
  type GraphQLSchema,
} from 'graphql';
import { FieldsError, MAX_FIELDS_LENGTH } from './fields.js';
import { allowedFields, checkPaths, enumValueFromRest, rootField, rootFieldType } from './selection.js';
import { RestInvalidArgument, shownInMessage } from './errors.js';

const PATH = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/** Missing or empty is a 400: a PATCH must say what it changes. */
export function parseUpdateMask(raw: string | undefined): string[][] {
  if (raw === undefined || raw.trim() === '') throw new FieldsError('update_mask is required: name the fields to change, e.g. update_mask=status,memo');
  if (raw.length > MAX_FIELDS_LENGTH) throw new FieldsError(`update_mask: longer than ${MAX_FIELDS_LENGTH} characters`);
  const seen = new Set<string>();
  const paths: string[][] = [];
  for (const part of raw.split(',')) {
    const name = part.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, '');
    if (name === '') continue;
    if (name === '*') {
      throw new FieldsError("update_mask: '*' (replace the whole resource) is not supported; name the fields to change");
    }
    if (!PATH.test(name)) throw new FieldsError(`update_mask: '${shownInMessage(name)}' is not a field path`);
    if (seen.has(name)) continue;
    seen.add(name);
    paths.push(name.split('.'));
  }
  if (paths.length === 0) throw new FieldsError('update_mask is required: name the fields to change, e.g. update_mask=status,memo');
  return paths;
}

export interface UpdatePlan {
  input: Record<string, unknown>;
  fields: string[];
}

export function planUpdate(schema: GraphQLSchema, mutation: string, mask: string[][], body: Record<string, unknown>): UpdatePlan {
  const field = rootField(schema, 'mutation', mutation);
  const resource = rootFieldType(schema, 'mutation', mutation);
  const inputArg = field.args.find((arg) => arg.name === 'input');
  const inputType = inputArg && getNamedType(inputArg.type);
  if (!inputType || !isInputObjectType(inputType)) throw new Error(`mutation ${mutation} has no input object argument`);
  const updatable = inputType.getFields();
  const outputs = allowedFields(resource);

  const input: Record<string, unknown> = {};
  for (const path of mask) {
    const name = path[0]!;
    const inputField = Object.hasOwn(updatable, name) ? updatable[name] : undefined;
    if (!inputField) {
      // Output-only (AIP-203): ignored, but only if it is a real path of the resource.
      if (outputs.has(name)) {
        checkPaths(resource, [path], 'update_mask');
        continue;
      }
      throw new FieldsError(`update_mask: unknown field '${path.join('.')}' (${resource.name} has no field '${name}')`, {
        reason: 'UNKNOWN_FIELD',
        metadata: { parameter: 'update_mask', path: path.join('.') },
      });
    }
    if (path.length > 1) throw new FieldsError(`update_mask: '${name}' has no subfields, so '${path.join('.')}' is not a field`);
    if (!Object.hasOwn(body, name) || body[name] === undefined) continue;
    input[name] = inputValue(inputField, body[name], isNonNullType(outputs.get(name)?.type ?? inputField.type));
  }
  return { input, fields: Object.keys(input) };
}

function inputValue(field: GraphQLInputField, value: unknown, nonNull: boolean): unknown {
  if (value === null) {
    if (nonNull) throw invalidField(field, `'${field.name}' cannot be null`);
    return null;
  }
  const named = getNamedType(field.type);
  if (isEnumType(named)) {
    const allowed = named.getValues().map((v) => v.name.toLowerCase());
    const mapped = typeof value === 'string' ? enumValueFromRest(named, value) : undefined;
    if (mapped === undefined) {
      const shown = typeof value === 'string' ? `'${shownInMessage(value)}'` : `a JSON ${jsonType(value)}`;
      throw invalidField(field, `'${field.name}' must be one of ${allowed.join(', ')}; got ${shown}`);
    }
    return mapped;
  }
  let problem: string | undefined;
  coerceInputValue(value, field.type, (_path, invalid, error) => {
    problem ??= inJsonTerms(error.message, invalid);
  });
  if (problem !== undefined) throw invalidField(field, `'${field.name}' ${problem}`);
  return value;
}

/** A body field's value the update cannot take, named in BadRequest's field violations (AIP-193). */
function invalidField(field: GraphQLInputField, description: string): RestInvalidArgument {
  return new RestInvalidArgument(description, { fieldViolations: [{ field: field.name, description }] });
}

/** GraphQL's built-in scalars, as a REST client (who sent JSON, not GraphQL) would say what they take. */
const SCALAR_IN_JSON_TERMS: Readonly<Record<string, string>> = {
  Int: 'a whole number from -2147483648 to 2147483647',
  Float: 'a finite number',
  String: 'a JSON string',
  Boolean: 'true or false',
  ID: 'a string or a whole number',
};

/**
 * A coercion error of a built-in scalar (`Int cannot represent non 32-bit signed integer value: …`) in the JSON
 * terms of a REST body; any other (our own scalars', enums') is kept, prefixed as not valid.
 */
export function inJsonTerms(message: string, value: unknown): string {
  const scalar = /^(Int|Float|String|Boolean|ID) cannot represent/.exec(message)?.[1];
  if (scalar === undefined) return `is not valid: ${message}`;
  const shown = typeof value === 'string' ? `'${shownInMessage(value)}'` : typeof value === 'number' || typeof value === 'boolean' ? `${String(value)}` : `a JSON ${jsonType(value)}`;
  return `must be ${SCALAR_IN_JSON_TERMS[scalar]}; got ${shown}`;
}

export function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

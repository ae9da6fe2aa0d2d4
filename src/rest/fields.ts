/**
 * The `fields` query parameter: which fields of a resource a response carries (Google's
 * partial-response syntax). A comma-separated list of names; a name may carry a nested list,
 * `seller(name,rating)`, or be a dotted path, `seller.name`; every form merges into one tree.
 *
 *   parseFields('id, name ,seller(name),seller.rating,id')
 *     → Map { id → WHOLE, name → WHOLE, seller → Map { name → WHOLE, rating → WHOLE } }
 *   printFields(that)  → 'id,name,seller(name,rating)'
 *
 * Absent, empty and `*` all mean every field (WHOLE). `*` inside a list or at the end of a path
 * means the whole object it stands in. This module knows only the syntax; which names exist is
 * checked against the GraphQL schema in selection.ts.
 */
import { LRUCache } from 'lru-cache';
import { RestInvalidArgument, type RestErrorOptions } from './errors.js';

/** A whole field: every subfield of an object, or simply the value of a scalar. */
export const WHOLE = true;
export type Whole = typeof WHOLE;
/** A field tree: `WHOLE`, or the named subfields, each with its own tree. */
export type FieldTree = Whole | FieldMap;
export type FieldMap = Map<string, FieldTree>;

/** Bounds that keep hostile input cheap: a longer or deeper `fields` is refused with a 400. */
export const MAX_FIELDS_LENGTH = 4096;
export const MAX_FIELDS_DEPTH = 16;

const NAME_START = /[A-Za-z_]/;
const NAME_CHAR = /[A-Za-z0-9_]/;
const DIGIT = /[0-9]/;
const SPACE = /[ \t\r\n]/;

/**
 * A `fields` (or `update_mask`) value the syntax or the schema does not allow. Messages start
 * with the parameter's name, which becomes the BadRequest field violation.
 */
export class FieldsError extends RestInvalidArgument {
  protected override readonly defaultReason: string = 'INVALID_FIELD_MASK';

  constructor(message: string, options: RestErrorOptions = {}) {
    const parameter = /^([a-z_]+)\b/.exec(message)?.[1] ?? 'fields';
    super(message, { fieldViolations: [{ field: parameter, description: message }], ...options });
  }
}

function describeChar(char: string): string {
  return JSON.stringify(char);
}

class Parser {
  private pos = 0;
  /** The last complete item, to name where an error is. */
  private lastPath: string | undefined;
  /** Every path named, wildcards included, so the schema can check each (merging can hide some). */
  readonly paths: string[][] = [];

  constructor(
    private readonly text: string,
    private readonly parameter: string,
  ) {}

  fail(message: string): never {
    throw new FieldsError(`${this.parameter}: ${message}`);
  }

  private peek(): string | undefined {
    return this.text[this.pos];
  }

  private skipSpace(): void {
    while (this.pos < this.text.length && SPACE.test(this.text[this.pos]!)) this.pos++;
  }

  /** The whole value: a list, and nothing after it. */
  parseTop(): FieldTree | undefined {
    const tree = this.parseList([]);
    // parseList stops only at the end or at a ')' that closes nothing.
    if (this.pos < this.text.length) this.fail(`unmatched ')'${this.lastPath ? ` after '${this.lastPath}'` : ''}`);
    return tree;
  }

  /** `item (',' item)*` up to `)` or the end, inside the object at `prefix`; empty items are skipped. */
  private parseList(prefix: string[]): FieldTree | undefined {
    let tree: FieldTree | undefined;
    for (;;) {
      this.skipSpace();
      const char = this.peek();
      if (char === undefined || char === ')') return tree;
      if (char === ',') {
        this.pos++;
        continue;
      }
      const item = this.parseItem(prefix);
      tree = merge(tree, item.tree);
      this.lastPath = item.path;
      this.skipSpace();
      const next = this.peek();
      if (next === ',') {
        this.pos++;
      } else if (next !== undefined && next !== ')') {
        this.fail(`unexpected ${describeChar(next)} after '${item.path}'`);
      }
    }
  }

  /** `path ['(' list ')']` where `path` is `name ('.' name)*`. */
  private parseItem(prefix: string[]): { tree: FieldTree; path: string } {
    const segments: string[] = [];
    for (;;) {
      this.skipSpace();
      segments.push(this.parseName([...prefix, ...segments]));
      if (prefix.length + segments.length > MAX_FIELDS_DEPTH) {
        this.fail(`nesting deeper than ${MAX_FIELDS_DEPTH} levels at '${[...prefix, ...segments].join('.')}'`);
      }
      this.skipSpace();
      if (this.peek() !== '.') break;
      this.pos++;
    }
    const full = [...prefix, ...segments];
    const path = full.join('.');
    if (segments.slice(0, -1).includes('*')) this.fail(`a wildcard may only end a path, in '${path}'`);
    let leaf: FieldTree = WHOLE;
    if (this.peek() === '(') {
      if (segments.at(-1) === '*') this.fail(`a wildcard takes no subfields, in '${path}'`);
      this.pos++;
      const inner = this.parseList(full);
      if (this.peek() !== ')') this.fail(`unclosed '(' after '${path}'`);
      this.pos++;
      if (inner === undefined) this.fail(`'${path}()' names no subfields`);
      leaf = inner;
    } else {
      this.paths.push(full);
    }
    // Build the nested tree from the innermost segment out; `*` stands for its parent whole.
    let tree: FieldTree = leaf;
    for (let i = segments.length - 1; i >= 0; i--) {
      const name = segments[i]!;
      tree = name === '*' ? WHOLE : new Map([[name, tree]]);
    }
    return { tree, path };
  }

  /** One name (or `*`) of the object at `at`; names the place in every refusal. */
  private parseName(at: string[]): string {
    const start = this.pos;
    const char = this.peek();
    const where = at.join('.');
    if (char === '*') {
      this.pos++;
      return '*';
    }
    if (char === undefined || !NAME_START.test(char)) {
      if (char === undefined) this.fail(where ? `a field name is missing after '${where}.'` : 'a field name is missing at the end');
      if (DIGIT.test(char) && where) this.fail(`list indexes are not supported, in '${where}.${this.readWhile(NAME_CHAR)}'`);
      if (char === '[') this.fail(`list indexes are not supported, in '${where}[…]'`);
      this.fail(where ? `unexpected ${describeChar(char)} in '${where}'` : `unexpected ${describeChar(char)} where a field name belongs`);
    }
    const name = this.readWhile(NAME_CHAR);
    if (this.peek() === '[') this.fail(`list indexes are not supported, in '${[...at, name].join('.')}[…]'`);
    return this.text.slice(start, start + name.length);
  }

  private readWhile(pattern: RegExp): string {
    const start = this.pos;
    while (this.pos < this.text.length && pattern.test(this.text[this.pos]!)) this.pos++;
    return this.text.slice(start, this.pos);
  }
}

/** The union of two trees: a whole field absorbs any selection of its subfields. */
export function merge(a: FieldTree | undefined, b: FieldTree): FieldTree {
  if (a === undefined) return b;
  if (a === WHOLE || b === WHOLE) return WHOLE;
  const result: FieldMap = new Map(a);
  for (const [name, subtree] of b) result.set(name, merge(result.get(name), subtree));
  return result;
}

export interface ParsedFields {
  /** The merged selection. */
  tree: FieldTree;
  /**
   * Every path as written (`seller(name)` gives `['seller','name']`), including those a merge
   * absorbed (`seller,seller.nope`): the schema check looks at each, so no typo goes unreported.
   */
  paths: string[][];
}

/**
 * Parses a `fields` value. Absent, empty (or only commas and spaces) and `*` give `WHOLE`.
 * Throws FieldsError (400 INVALID_ARGUMENT) naming the offending field.
 */
export function parseFields(raw: string | undefined, parameter = 'fields'): ParsedFields {
  if (raw === undefined) return EVERY_FIELD;
  if (raw.length > MAX_FIELDS_LENGTH) throw new FieldsError(`${parameter}: longer than ${MAX_FIELDS_LENGTH} characters`);
  const key = `${parameter}\u0000${raw}`;
  let parsed = parsedFields.get(key);
  if (!parsed) {
    const parser = new Parser(raw, parameter);
    const tree = parser.parseTop();
    parsed = { tree: tree ?? WHOLE, paths: parser.paths };
    parsedFields.set(key, parsed);
  }
  return parsed;
}

const EVERY_FIELD: ParsedFields = { tree: WHOLE, paths: [] };

/**
 * Clients repeat the same few `fields` values, so each parse is kept (trees are never modified
 * after parsing), and the same value yields the same object, which lets OperationCache remember
 * its checks by identity. Values that fail to parse are not kept.
 */
const parsedFields = new LRUCache<string, ParsedFields>({ max: 1_000 });

/**
 * The canonical text of a tree: names sorted, nested lists in parentheses, a whole object as
 * its bare name, everything as `*`. `parseFields(printFields(t))` equals `t`.
 */
export function printFields(tree: FieldTree): string {
  if (tree === WHOLE) return '*';
  return printMap(tree);
}

function printMap(tree: FieldMap): string {
  return [...tree.keys()]
    .sort()
    .map((name) => {
      const subtree = tree.get(name)!;
      return subtree === WHOLE ? name : `${name}(${printMap(subtree)})`;
    })
    .join(',');
}

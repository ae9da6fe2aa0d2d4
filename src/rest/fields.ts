/**
 * The `fields` query parameter (Google's partial-response syntax): `id,seller(name),seller.rating` merges into one
 * tree. Absent, empty and `*` mean every field. Which names exist is checked in selection.ts.
 */
import { LRUCache } from 'lru-cache';
import { RestInvalidArgument, type RestErrorOptions } from './errors.js';

export const WHOLE = true;
export type Whole = typeof WHOLE;
export type FieldTree = Whole | FieldMap;
export type FieldMap = Map<string, FieldTree>;

/** Bounds that keep hostile input cheap: a longer or deeper `fields` is refused with a 400. */
export const MAX_FIELDS_LENGTH = 4096;
export const MAX_FIELDS_DEPTH = 16;

const NAME_START = /[A-Za-z_]/;
const NAME_CHAR = /[A-Za-z0-9_]/;
const DIGIT = /[0-9]/;
const SPACE = /[ \t\r\n]/;

/** Messages start with the parameter's name, which becomes the BadRequest field violation. */
export class FieldsError extends RestInvalidArgument {
  protected override readonly defaultReason: string = 'INVALID_FIELD_MASK';

  constructor(message: string, options: RestErrorOptions = {}) {
    const parameter = /^([a-z_]+)\b/.exec(message)?.[1] ?? 'fields';
    super(message, { fieldViolations: [{ field: parameter, description: message }], ...options });
  }
}

/** The character at `pos` as a message shows it: one a reader cannot see (a control, format or space character) by its code point. */
function describeChar(text: string, pos: number): string {
  const codePoint = text.codePointAt(pos)!;
  const char = String.fromCodePoint(codePoint);
  return /^[\p{C}\p{Z}]$/u.test(char) ? `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}` : JSON.stringify(char);
}

class Parser {
  private pos = 0;
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

  parseTop(): FieldTree | undefined {
    const tree = this.parseList([]);
    // parseList stops only at the end or at a ')' that closes nothing.
    if (this.pos < this.text.length) this.fail(`unmatched ')'${this.lastPath ? ` after '${this.lastPath}'` : ''}`);
    return tree;
  }

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
        this.fail(`unexpected ${describeChar(this.text, this.pos)} after '${item.path}'`);
      }
    }
  }

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
      const shown = describeChar(this.text, this.pos);
      this.fail(where ? `unexpected ${shown} in '${where}'` : `unexpected ${shown} where a field name belongs`);
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
  tree: FieldTree;
  /** Every path as written, including those a merge absorbed, so the schema check misses no typo. */
  paths: string[][];
}

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

// Clients repeat a few `fields` values; the same value yields the same object, so OperationCache can remember
// its checks by identity (trees are never modified after parsing).
const parsedFields = new LRUCache<string, ParsedFields>({ max: 1_000 });

/** Canonical text, names sorted: `parseFields(printFields(t))` equals `t`. */
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

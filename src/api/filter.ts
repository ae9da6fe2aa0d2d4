/**
 * The AIP-160 filter language as far as our lists need it; syntax only, the allowed paths are the caller's
 * (src/graphql/listing.ts). As AIP-160 says, `OR` binds tighter than `AND` (`a AND b OR c` is `a AND (b OR c)`);
 * length and nesting are bounded so hostile text stays cheap.
 *   parseFilter('price < 5000 AND seller.name = "Acme"') → { kind: 'and', children: [{ kind: 'compare', … }, …] }
 */

export const MAX_FILTER_LENGTH = 2048;
export const MAX_FILTER_DEPTH = 16;
export const MAX_FILTER_TERMS = 50;

export type Comparator = '=' | '!=' | '<' | '<=' | '>' | '>=' | ':';

export type FilterValue =
  | { kind: 'string'; value: string }
  | { kind: 'number'; value: number }
  | { kind: 'boolean'; value: boolean }
  /** An unquoted word (`status = PAID`): text whose meaning the field decides. */
  | { kind: 'text'; value: string }
  /** `*` after `:`: the field is present (not null). */
  | { kind: 'any' };

export type FilterNode =
  | { kind: 'and'; children: FilterNode[] }
  | { kind: 'or'; children: FilterNode[] }
  | { kind: 'not'; child: FilterNode }
  | { kind: 'compare'; path: string[]; op: Comparator; value: FilterValue; position: number };

/** A filter the grammar or a limit refuses; `position` is the 1-based character where it went wrong. */
export class FilterSyntaxError extends Error {
  override readonly name = 'FilterSyntaxError';
  constructor(
    readonly detail: string,
    readonly position: number,
  ) {
    super(`${detail} at position ${position}`);
  }
}

type Token =
  | { type: 'name'; text: string; pos: number }
  | { type: 'string'; text: string; pos: number }
  | { type: 'number'; value: number; text: string; pos: number }
  | { type: 'op'; text: Comparator; pos: number }
  | { type: '(' | ')' | '.' | '-' | '*' | 'end'; pos: number };

const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const NUMBER = /(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/y;
const SPACE = /[ \t\r\n]+/y;
const COMPARATORS: readonly Comparator[] = ['<=', '>=', '!=', '=', '<', '>', ':'];
const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', '"': '"', "'": "'" };

const isSurrogate = (char: string) => /^[\uD800-\uDFFF]$/.test(char);
const isPair = (chars: string) => /^[\uD800-\uDBFF][\uDC00-\uDFFF]$/.test(chars);

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const at = (re: RegExp): string | undefined => {
    re.lastIndex = i;
    const match = re.exec(text);
    return match?.[0];
  };
  while (i < text.length) {
    const pos = i + 1;
    const space = at(SPACE);
    if (space) {
      i += space.length;
      continue;
    }
    const char = text[i]!;
    if (char === '"' || char === "'") {
      let value = '';
      let j = i + 1;
      for (;;) {
        if (j >= text.length) throw new FilterSyntaxError('unterminated string', pos);
        const c = text[j]!;
        if (c === char) break;
        if (c === '\\') {
          const escaped = text[j + 1];
          if (escaped === undefined || !Object.hasOwn(ESCAPES, escaped)) throw new FilterSyntaxError('unknown escape in string', j + 1);
          value += ESCAPES[escaped];
          j += 2;
          continue;
        }
        // PostgreSQL text cannot hold NUL, and the driver would silently turn a lone surrogate into U+FFFD.
        if (c === '\0') throw new FilterSyntaxError('NUL character in string', j + 1);
        if (isSurrogate(c)) {
          const pair = c + (text[j + 1] ?? '');
          if (!isPair(pair)) throw new FilterSyntaxError('unpaired UTF-16 surrogate in string', j + 1);
          value += pair;
          j += 2;
          continue;
        }
        value += c;
        j++;
      }
      tokens.push({ type: 'string', text: value, pos });
      i = j + 1;
      continue;
    }
    const name = at(NAME);
    if (name) {
      tokens.push({ type: 'name', text: name, pos });
      i += name.length;
      continue;
    }
    const number = at(NUMBER);
    if (number) {
      const value = Number(number);
      if (!Number.isFinite(value)) throw new FilterSyntaxError('number out of range', pos);
      tokens.push({ type: 'number', value, text: number, pos });
      i += number.length;
      continue;
    }
    const comparator = COMPARATORS.find((candidate) => text.startsWith(candidate, i));
    if (comparator) {
      tokens.push({ type: 'op', text: comparator, pos });
      i += comparator.length;
      continue;
    }
    if (char === '(' || char === ')' || char === '.' || char === '-' || char === '*') {
      tokens.push({ type: char, pos });
      i++;
      continue;
    }
    throw new FilterSyntaxError(`unexpected character ${JSON.stringify(char)}`, pos);
  }
  tokens.push({ type: 'end', pos: text.length + 1 });
  return tokens;
}

const KEYWORDS = new Set(['AND', 'OR', 'NOT']);

function describe(token: Token): string {
  switch (token.type) {
    case 'end':
      return 'the end of the filter';
    case 'name':
      return KEYWORDS.has(token.text) ? token.text : `'${token.text}'`;
    case 'string':
      return 'a string';
    case 'number':
      return `the number ${token.text}`;
    case 'op':
      return `'${token.text}'`;
    default:
      return `'${token.type}'`;
  }
}

class Parser {
  private index = 0;
  private depth = 0;
  private terms = 0;

  constructor(private readonly tokens: Token[]) {}

  private peek(): Token {
    return this.tokens[this.index]!;
  }

  private next(): Token {
    return this.tokens[this.index++]!;
  }

  private isKeyword(token: Token, word: string): boolean {
    return token.type === 'name' && token.text === word;
  }

  private expected(what: string): never {
    const token = this.peek();
    throw new FilterSyntaxError(`expected ${what}, found ${describe(token)}`, token.pos);
  }

  parse(): FilterNode | undefined {
    if (this.peek().type === 'end') return undefined;
    const node = this.expression();
    if (this.peek().type !== 'end') this.expected('AND, OR or the end of the filter');
    return node;
  }

  private enter(): void {
    if (++this.depth > MAX_FILTER_DEPTH) throw new FilterSyntaxError(`nested deeper than ${MAX_FILTER_DEPTH} levels`, this.peek().pos);
  }

  /** expression := sequence { AND sequence } */
  private expression(): FilterNode {
    const children = [this.sequence()];
    while (this.isKeyword(this.peek(), 'AND')) {
      this.next();
      children.push(this.sequence());
    }
    return children.length === 1 ? children[0]! : { kind: 'and', children };
  }

  /** sequence := factor { factor } (implicitly ANDed) */
  private sequence(): FilterNode {
    const children = [this.factor()];
    while (this.startsTerm(this.peek())) children.push(this.factor());
    return children.length === 1 ? children[0]! : { kind: 'and', children };
  }

  private startsTerm(token: Token): boolean {
    if (token.type === '(' || token.type === '-') return true;
    return token.type === 'name' && (token.text === 'NOT' || !KEYWORDS.has(token.text));
  }

  /** factor := term { OR term } */
  private factor(): FilterNode {
    const children = [this.term()];
    while (this.isKeyword(this.peek(), 'OR')) {
      this.next();
      children.push(this.term());
    }
    return children.length === 1 ? children[0]! : { kind: 'or', children };
  }

  /** term := [ NOT | - ] simple */
  private term(): FilterNode {
    const token = this.peek();
    if (this.isKeyword(token, 'NOT') || token.type === '-') {
      this.next();
      this.enter();
      const child = this.term();
      this.depth--;
      return { kind: 'not', child };
    }
    return this.simple();
  }

  /** simple := '(' expression ')' | restriction */
  private simple(): FilterNode {
    const token = this.peek();
    if (token.type === '(') {
      this.next();
      this.enter();
      const node = this.expression();
      if (this.peek().type !== ')') this.expected("')'");
      this.next();
      this.depth--;
      return node;
    }
    return this.restriction();
  }

  /** restriction := member comparator arg */
  private restriction(): FilterNode {
    const start = this.peek();
    const path = this.member();
    const op = this.peek();
    if (op.type !== 'op') this.expected(`a comparator (=, !=, <, <=, >, >=, :) after '${path.join('.')}'`);
    this.next();
    if (++this.terms > MAX_FILTER_TERMS) throw new FilterSyntaxError(`more than ${MAX_FILTER_TERMS} comparisons`, start.pos);
    const value = this.arg(op.text);
    return { kind: 'compare', path, op: op.text, value, position: start.pos };
  }

  private member(): string[] {
    const first = this.peek();
    if (first.type !== 'name' || KEYWORDS.has(first.text)) this.expected('a field name');
    this.next();
    const path = [first.text];
    while (this.peek().type === '.') {
      this.next();
      const part = this.peek();
      if (part.type !== 'name') this.expected(`a field name after '${path.join('.')}.'`);
      this.next();
      path.push(part.text);
    }
    return path;
  }

  private arg(op: Comparator): FilterValue {
    const token = this.next();
    switch (token.type) {
      case 'string':
        return { kind: 'string', value: token.text };
      case 'number':
        return { kind: 'number', value: token.value };
      case '-': {
        const number = this.peek();
        if (number.type !== 'number') break;
        this.next();
        return { kind: 'number', value: -number.value };
      }
      case '*':
        if (op === ':') return { kind: 'any' };
        throw new FilterSyntaxError("'*' is only allowed after ':' (field:*)", token.pos);
      case 'name':
        if (KEYWORDS.has(token.text)) break;
        if (token.text === 'true' || token.text === 'false') return { kind: 'boolean', value: token.text === 'true' };
        return { kind: 'text', value: token.text };
      default:
        break;
    }
    this.index--;
    return this.expected('a value (a "string", a number, true, false or a word)');
  }
}

/** Parses a filter; undefined for an empty one. Throws FilterSyntaxError and nothing else, whatever the input. */
export function parseFilter(text: string): FilterNode | undefined {
  if (text.length > MAX_FILTER_LENGTH) throw new FilterSyntaxError(`longer than ${MAX_FILTER_LENGTH} characters`, MAX_FILTER_LENGTH + 1);
  return new Parser(tokenize(text)).parse();
}

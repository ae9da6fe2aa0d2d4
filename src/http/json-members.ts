/** JSON object members named twice, which JSON.parse reads without a word (REST and /graphql bodies refuse them). */

interface JsonFrame {
  /** The member names seen so far in an object; undefined in an array. */
  names: Set<string> | undefined;
  /** The current member's name, or the current element's index. */
  at: string | number;
}

/**
 * The first member named twice in one object of a valid JSON text, with its path (`items[1].quantity`). JSON.parse keeps
 * the last value silently (RFC 8259 §4 leaves it to the parser), so a proxy that reads the first would approve one
 * request and the server serve another. Iterative, so nesting cannot blow the stack.
 */
export function repeatedMember(text: string): { name: string; path: string } | undefined {
  const frames: JsonFrame[] = [];
  let expectingName = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '"') {
      let end = i + 1;
      // Bounded, so text that is not JSON (an unterminated string) ends the scan rather than the process.
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (end >= text.length) return undefined;
      const frame = frames.at(-1);
      if (expectingName && frame?.names) {
        const raw = text.slice(i + 1, end);
        // Escapes spell the same name differently (`m\u0065mo` is `memo`).
        const name = raw.includes('\\') ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
        if (frame.names.has(name)) return { name, path: jsonPath([...frames.slice(0, -1).map((outer) => outer.at), name]) };
        frame.names.add(name);
        frame.at = name;
        expectingName = false;
      }
      i = end;
    } else if (char === '{') {
      frames.push({ names: new Set(), at: '' });
      expectingName = true;
    } else if (char === '[') {
      frames.push({ names: undefined, at: 0 });
      expectingName = false;
    } else if (char === '}' || char === ']') {
      frames.pop();
      expectingName = false;
    } else if (char === ',') {
      const frame = frames.at(-1);
      if (frame?.names) expectingName = true;
      else if (frame) frame.at = (frame.at as number) + 1;
    }
  }
  return undefined;
}

function jsonPath(parts: readonly (string | number)[]): string {
  return parts.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`)).join('');
}

/** A client's text as the message quotes it: at most 64 characters, then an ellipsis (as REST's messages do). */
const shown = (text: string) => (text.length > 64 ? `${text.slice(0, 64)}…` : text);

/** The refusal of a valid JSON text (`what`, in the message) naming a member twice: its message, and the member's path. */
export function repeatedMemberProblem(text: string, what = 'the request body'): { message: string; field: string } | undefined {
  const found = repeatedMember(text);
  return found && { message: `${what} names '${shown(found.name)}' twice in one object`, field: shown(found.path) };
}

/** Command files import only this and what they need, so `fieldgate client list` never loads the GraphQL schema. */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Config } from '../config.js';
import type { Runtime } from '../runtime.js';

/** A mistake in the command line: one line on stderr, exit status 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The command could not do what was asked (no such client, a locked data directory…): exit status 1. */
export class CommandFailed extends Error {
  override readonly name = 'CommandFailed';
}

export interface Io {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
  env: NodeJS.ProcessEnv;
}

export type Options = NonNullable<ParseArgsConfig['options']>;

export interface Command<O extends Options = Options> {
  summary: string;
  synopsis: string;
  details?: string[];
  options: O;
  /** Whether it takes positional arguments (an ID); others refuse any. */
  takesArguments?: boolean;
  run(input: CommandInput<O>): Promise<void>;
}

export interface CommandInput<O extends Options> {
  io: Io;
  values: ReturnType<typeof parseArgs<{ options: O; allowPositionals: true; strict: true }>>['values'] & { json?: boolean };
  positionals: string[];
  config(): Config;
}

export interface CommandGroup {
  summary: string;
  subcommands: Record<string, Command>;
}

export function defineCommand<O extends Options>(command: Command<O>): Command {
  return command as unknown as Command;
}

/** Levenshtein distance, to suggest the nearest command or option for a typo. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

export function nearest(input: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = candidate.startsWith(input) || input.startsWith(candidate) ? 1 : distance(input, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(best.length / 3)) ? best : undefined;
}

export function didYouMean(suggestion: string | undefined): string {
  return suggestion ? `; did you mean ${suggestion}?` : '';
}

export const COMMON_OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies Options;

/** Client ids, key ids and token ids are base64url, so one may start with `-`. */
const DASHED_ID = /^-[A-Za-z0-9_][A-Za-z0-9_-]{9,}$/;

function takesValue(arg: string, options: Options): boolean {
  if (arg.startsWith('--')) return !arg.includes('=') && options[arg.slice(2)]?.type === 'string';
  return arg.length === 2 && Object.values(options).some((option) => option.short === arg[1] && option.type === 'string');
}

/**
 * Moves every positional, and every id that starts with `-`, behind `--`, and joins a string
 * option with a dashed value (`--client -Xy…` → `--client=-Xy…`), so parseArgs never reads an id as
 * an option.
 */
function separateDashedIds(args: string[], options: Options): string[] {
  const flags: string[] = [];
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      positionals.push(...args.slice(i + 1));
      break;
    }
    const next = args[i + 1];
    if (takesValue(arg, options) && next !== undefined && (!next.startsWith('-') || DASHED_ID.test(next))) {
      flags.push(...(arg.startsWith('--') ? [`${arg}=${next}`] : [arg, next]));
      i++;
    } else if (!arg.startsWith('-') || arg === '-' || DASHED_ID.test(arg)) {
      positionals.push(arg);
    } else {
      flags.push(arg);
    }
  }
  return positionals.length ? [...flags, '--', ...positionals] : flags;
}

export function parseCommandLine(name: string, given: string[], options: Options) {
  const all: Options = { ...COMMON_OPTIONS, ...options };
  const args = separateDashedIds(given, all);
  for (const arg of args) {
    if (arg === '--') break;
    if (!arg.startsWith('-') || arg === '-') continue;
    const flag = arg.startsWith('--') ? arg.slice(2).split('=')[0]! : undefined;
    const known = flag !== undefined ? flag in all : Object.values(all).some((o) => o.short === arg.slice(1, 2)) && arg.length === 2;
    if (!known) {
      const suggestion = nearest(flag ?? arg.slice(1), Object.keys(all));
      // The option's name only: the value of `--password=…` (for --password-stdin) must not end up in a CI log.
      const shown = flag !== undefined ? `--${flag}` : arg.slice(0, 2);
      throw new UsageError(`${name}: unknown option ${shown}${didYouMean(suggestion && `--${suggestion}`)}`);
    }
  }
  try {
    return parseArgs({ args, options: all, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(`${name}: ${(error as Error).message.replace(/\. To specify.*$/s, '')}`);
  }
}

export function print(io: Io, json: boolean | undefined, value: object, human: string): void {
  io.stdout.write(json ? `${JSON.stringify(value)}\n` : `${human}\n`);
}

/** Opens the runtime (migrating the database), runs `fn`, closes it; logs below `warn` stay quiet. */
export async function withRuntime<T>(config: Config, fn: (runtime: Runtime) => Promise<T>): Promise<T> {
  const [{ openRuntime }, { createLogger }] = await Promise.all([import('../runtime.js'), import('../logger.js')]);
  const runtime = await openRuntime(config, createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, process.stderr));
  try {
    return await fn(runtime);
  } finally {
    await runtime.close();
  }
}

/** `90`, `90s`, `15m`, `1h`, `2d` → seconds. */
export function parseDuration(option: string, raw: string, maxSeconds: number): number {
  const match = /^(\d+)(s|m|h|d)?$/.exec(raw.trim());
  const unit = { s: 1, m: 60, h: 3600, d: 86_400 }[(match?.[2] ?? 's') as 's'];
  const seconds = match ? Number(match[1]) * unit : NaN;
  if (!Number.isSafeInteger(seconds) || seconds > maxSeconds) {
    throw new UsageError(`${option} must be a duration such as 0, 90s, 15m, 1h or 2d (at most ${maxSeconds / 86_400} days), got "${raw}"`);
  }
  return seconds;
}

export function onePositional(command: string, what: string, positionals: string[]): string {
  const [value] = positionals;
  if (!value || positionals.length > 1) throw new UsageError(`${command} needs exactly one ${what}`);
  return value;
}

/**
 * Reading and updating the `.env` file `magpie onboard` writes: only the
 * variables given change (every other line, comment and blank line is kept
 * as it was), an existing file is first copied to `.env.bak-<timestamp>`, and
 * the new text replaces the old in one rename of a 0600 temporary file, so a
 * crash never leaves half a `.env` and no other user can read the secrets.
 */
import { open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseEnv } from 'node:util';
import { AppError, ConfigError, describeError } from '../errors/index.js';

/** A `.env` as it is on disk, or as it would start when there is none. */
export interface EnvFileState {
  /** Absolute path. */
  file: string;
  /** The text now on disk; undefined when there is no file yet. */
  text: string | undefined;
  /** Its variables (node's own parser, as magpie reads it at start). */
  values: Record<string, string>;
}

/** What {@link writeEnvFile} did. */
export interface EnvWriteResult {
  file: string;
  /** The copy of the previous file, when there was one. */
  backup: string | undefined;
  /** Variables that were already in the file and got the new value. */
  replaced: string[];
  /** Variables appended at the end (they were not in the file). */
  added: string[];
}

const ASSIGNMENT = /^(\s*(?:export\s+)?)([A-Za-z_][A-Za-z0-9_]*)(\s*=\s*)(.*)$/;

/**
 * Where the `.env.example` of the package is (two levels above this file in
 * `src/onboard/`, `dist/onboard/` and `dist/chunks/` alike): a brand-new
 * `.env` starts from it so every setting stays documented. It may be missing
 * (an installed package has none).
 */
export function exampleEnvFile(): string {
  return fileURLToPath(new URL('../../.env.example', import.meta.url));
}

/** Reads `file` (a missing file is an empty state); an unreadable one is a ConfigError. */
export async function readEnvFile(file: string): Promise<EnvFileState> {
  const absolute = path.resolve(file);
  let text: string | undefined;
  try {
    text = await readFile(absolute, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new ConfigError(`${absolute} cannot be read (${describeError(err)}): fix or move it`, {
        cause: err,
      });
    }
  }
  return {
    file: absolute,
    text,
    values: text === undefined ? {} : (parseEnv(text) as Record<string, string>),
  };
}

/**
 * A value as a `.env` line holds it: bare when it is plain, else in single
 * quotes (node's parser takes those literally). A value with a newline or
 * with both a single quote and a double quote cannot be written safely and
 * is refused, naming the variable.
 *
 * @example formatValue('A', 'https://x/v1#frag') // "'https://x/v1#frag'"
 */
export function formatValue(name: string, value: string): string {
  if (/[\r\n\0]/.test(value)) throw new ConfigError(`${name}: a value cannot hold a line break`);
  if (/^[\w.,:/@+*%~?&=-]*$/.test(value)) return value;
  if (!value.includes("'")) return `'${value}'`;
  if (!value.includes('"') && !value.includes('\\')) return `"${value}"`;
  throw new ConfigError(`${name}: a value cannot hold both ' and " (or ' and \\)`);
}

/**
 * The text of `state` with `updates` applied: each assignment of an updated
 * variable gets the new value (every occurrence, an `export ` prefix kept; a
 * quoted value spanning several lines is replaced whole); variables not in the
 * text are appended under one comment. Everything else is unchanged.
 */
export function applyEnvUpdates(
  text: string,
  updates: Record<string, string>,
): { text: string; replaced: string[]; added: string[] } {
  const lines = text === '' ? [] : text.split('\n');
  const trailingNewline = text.endsWith('\n');
  if (trailingNewline) lines.pop();
  const out: string[] = [];
  const replaced = new Set<string>();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const m = ASSIGNMENT.exec(line);
    if (!m) {
      out.push(line);
      continue;
    }
    // A quoted value may span lines: they belong to it, even when one looks like an assignment.
    const end = endOfValue(lines, i, m[4]!);
    const name = m[2]!;
    if (Object.hasOwn(updates, name)) {
      out.push(`${m[1]}${name}=${formatValue(name, updates[name]!)}`);
      replaced.add(name);
    } else {
      out.push(...lines.slice(i, end + 1));
    }
    i = end;
  }
  const added = Object.keys(updates).filter((name) => !replaced.has(name));
  if (added.length > 0) {
    if (out.length > 0 && out.at(-1)!.trim() !== '') out.push('');
    out.push('# Set by magpie onboard');
    for (const name of added) out.push(`${name}=${formatValue(name, updates[name]!)}`);
  }
  return { text: `${out.join('\n')}\n`, replaced: [...replaced], added };
}

/** The index of the last line of a value that starts on line `i` (a quoted value may span lines). */
function endOfValue(lines: string[], i: number, value: string): number {
  const quote = value[0];
  if (quote !== '"' && quote !== "'" && quote !== '`') return i;
  if (value.indexOf(quote, 1) !== -1) return i;
  for (let j = i + 1; j < lines.length; j++) {
    if (lines[j]!.includes(quote)) return j;
  }
  return i; // never closed: node reads it as a plain value, so only this line is it
}

/**
 * Writes `updates` into `state.file`: the previous file (if any) is copied to
 * `<file>.bak-<timestamp>` (mode 0600), then the new text is written to a
 * temporary file (mode 0600) in the same folder and renamed over the old one.
 * A brand-new file starts from `template` when given.
 */
export async function writeEnvFile(
  state: EnvFileState,
  updates: Record<string, string>,
  options: { template?: string | undefined; now?: Date } = {},
): Promise<EnvWriteResult> {
  const base = state.text ?? options.template ?? '';
  const applied = applyEnvUpdates(base, updates);
  const backup = state.text === undefined ? undefined : await backUp(state.file, options.now ?? new Date());
  const temp = `${state.file}.tmp-${process.pid}-${Date.now()}`;
  try {
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(applied.text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, state.file);
  } catch (err) {
    await rm(temp, { force: true });
    throw new AppError('INTERNAL', `cannot write ${state.file} (${describeError(err)})`, { cause: err });
  }
  const fromTemplate = state.text === undefined && options.template !== undefined;
  return {
    file: state.file,
    backup,
    replaced: fromTemplate ? [] : applied.replaced,
    added: fromTemplate ? Object.keys(updates) : applied.added,
  };
}

/**
 * Copies `file` to `<file>.bak-YYYYMMDDTHHMMSSZ` (a `-N` suffix when that exists). The copy is
 * created with mode 0600 from the start: it holds the old secrets.
 */
async function backUp(file: string, now: Date): Promise<string> {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (err) {
    throw new AppError('INTERNAL', `cannot back up ${file} (${describeError(err)})`, { cause: err });
  }
  for (let n = 0; n < 100; n++) {
    const target = `${file}.bak-${stamp}${n === 0 ? '' : `-${n}`}`;
    try {
      await writeFile(target, bytes, { flag: 'wx', mode: 0o600 });
      return target;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw new AppError('INTERNAL', `cannot back up ${file} (${describeError(err)})`, { cause: err });
    }
  }
  throw new AppError('INTERNAL', `cannot back up ${file}: 100 backups of this second already exist`);
}

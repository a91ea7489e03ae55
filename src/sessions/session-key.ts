/**
 * Session keys (`<channel>:<chatId>[/<threadId>]`) to file names and back.
 *
 * The mapping is a bijection, so two keys never share a file:
 * - letters, digits, `@` and `-` stay as they are;
 * - `:` becomes `_` (so `cli:default` → `cli_default`, readable in `ls`);
 * - every other character, `_`, `.` and `%` included, becomes `%XX` per UTF-8 byte.
 *
 * Because `.` is always escaped, a live session's name never contains a dot, so
 * archived logs (`<name>.<timestamp>.jsonl`) and summaries (`<name>.summary.json`)
 * can never collide with another session's file.
 */
import { AppError } from '../errors/index.js';

/** File names longer than this (before the extension) are refused; file systems stop at 255 bytes. */
export const MAX_SESSION_FILE_NAME = 200;

const PLAIN = /[A-Za-z0-9@-]/;

/**
 * The file-safe base name (no extension) for a session key.
 *
 * @example sessionFileName('web:-100123/42') // 'web_-100123%2F42'
 * @throws AppError INVALID_SESSION_KEY for '', '.', '..', or a key whose name would be too long.
 */
export function sessionFileName(key: string): string {
  if (key === '' || key === '.' || key === '..') {
    throw new AppError('INVALID_SESSION_KEY', `invalid session key ${JSON.stringify(key)}`);
  }
  let out = '';
  for (const char of key) {
    if (char === ':') out += '_';
    else if (PLAIN.test(char)) out += char;
    else {
      for (const byte of Buffer.from(char, 'utf8'))
        out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  if (out.includes('/') || out.includes('\\') || out === '.' || out === '..') {
    throw new AppError('INVALID_SESSION_KEY', `session key ${JSON.stringify(key)} is not file-safe`);
  }
  if (out.length > MAX_SESSION_FILE_NAME) {
    throw new AppError(
      'INVALID_SESSION_KEY',
      `session key is too long (${out.length} characters once made file-safe; at most ${MAX_SESSION_FILE_NAME})`,
    );
  }
  return out;
}

/** The session key for a base name made by {@link sessionFileName}, or undefined if it is not one. */
export function sessionKeyFromFileName(name: string): string | undefined {
  if (!/^(?:[A-Za-z0-9@_-]|%[0-9A-F]{2})+$/.test(name)) return undefined;
  try {
    return decodeURIComponent(name.replace(/_/g, '%3A'));
  } catch {
    // Not valid UTF-8 escapes: not a name we wrote.
    return undefined;
  }
}

/**
 * The API's keys: MAGPIE_API_KEYS lists `key:name` pairs (commas or new
 * lines; a key without `:name` is named by its place, key1, key2…), or names a file of them (a value starting with `/`, one pair per
 * line, `#` comments). Each name is a sender of its own (allow-lists,
 * approvals, budgets and the default session). Each key keeps its SHA-256
 * digest, which the API compares in constant time (channels/api/keys.ts).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';

/** The fewest characters a key may have (a guessable key is refused at start-up). */
export const MIN_KEY_LENGTH = 24;

const KEY = /^[\w.~+/=-]+$/;
const NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;

/** One API key: the caller's name and the key (kept for redaction) with its digest. */
export interface ApiKey {
  name: string;
  secret: string;
  /** SHA-256 of the key, hex (the configuration is frozen, so no Buffer here). */
  digest: string;
}

export function digestOf(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * Reads `key:name` pairs. Returns the keys, or the first problem as one line
 * that never shows a key (only its position or its name).
 *
 * @example parseApiKeys('sk-0123456789abcdefghijklmn:phone') // { keys: [{ name: 'phone', … }] }
 */
export function parseApiKeys(text: string): { keys: ApiKey[] } | { problem: string } {
  const keys: ApiKey[] = [];
  const entries = text
    .split(/[\n,]/)
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line !== '');
  for (const [i, entry] of entries.entries()) {
    // A key given without a name is named by its place: key1, key2, …
    const colon = entry.lastIndexOf(':');
    const secret = (colon >= 0 ? entry.slice(0, colon) : entry).trim();
    const name = colon >= 0 ? entry.slice(colon + 1).trim() : `key${i + 1}`;
    const where = `entry ${i + 1}`;
    if (!secret || !name) return { problem: `${where} is not key:name` };
    if (!NAME.test(name))
      return {
        problem: `${where}: the name "${name.slice(0, 40)}" is not lower-case letters, digits, - or _`,
      };
    if (secret.length < MIN_KEY_LENGTH || !KEY.test(secret))
      return {
        problem: `the key of "${name}" must be at least ${MIN_KEY_LENGTH} characters of letters, digits and _.~+/=- (e.g. openssl rand -hex 24)`,
      };
    if (keys.some((k) => k.name === name)) return { problem: `the name "${name}" is given twice` };
    if (keys.some((k) => k.secret === secret))
      return { problem: `the key of "${name}" is also another name's key` };
    keys.push({ name, secret, digest: digestOf(secret).toString('hex') });
  }
  return { keys };
}

/** MAGPIE_API_KEYS as a config value: the pairs, or a file of them; unset is none. */
export const apiKeysValue = z
  .string()
  .optional()
  .transform((raw, ctx): ApiKey[] => {
    const value = raw?.trim() ?? '';
    if (value === '') return [];
    let text = value;
    if (value.startsWith('/')) {
      try {
        text = readFileSync(value, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
        ctx.addIssue({ code: 'custom', message: `the key file ${value} cannot be read (${code})` });
        return z.NEVER;
      }
    }
    const parsed = parseApiKeys(text);
    if ('problem' in parsed) {
      ctx.addIssue({ code: 'custom', message: parsed.problem });
      return z.NEVER;
    }
    if (parsed.keys.length === 0) {
      ctx.addIssue({ code: 'custom', message: 'lists no key:name pair' });
      return z.NEVER;
    }
    return parsed.keys;
  });

/**
 * The value types of environment variables as zod schemas: durations, whole numbers,
 * optional text and URLs, comma-separated lists, on/off switches. Shared by the
 * core schema (config/index.ts) and each channel's slice (src/channels/<name>/descriptor.ts).
 */
import { z } from 'zod';
import { checkDuration, type DurationBounds } from './duration.js';

/** A duration variable: above 0 and at most 24 h unless `bounds` say otherwise (see duration.ts). */
export const duration = (fallback: string, bounds: DurationBounds = {}) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const checked = checkDuration(text, bounds);
      if (!checked.ok) {
        ctx.addIssue({ code: 'custom', message: checked.reason });
        return z.NEVER;
      }
      return checked.ms;
    });

/** A whole number of at least 1, `fallback` when unset. */
export const positiveInt = (fallback: number) =>
  z
    .string()
    .default(String(fallback))
    .transform((text, ctx) => {
      const n = Number(text);
      if (!Number.isInteger(n) || n < 1) {
        ctx.addIssue({ code: 'custom', message: `"${text}" is not a positive whole number` });
        return z.NEVER;
      }
      return n;
    });

const BYTE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
};

/** A size in bytes: a whole number with an optional unit (K, M, G, KiB, MiB, GiB; all powers of 1024), `fallback` when unset. */
export const byteSize = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const match = /^\s*(\d+)\s*([a-z]*)\s*$/i.exec(text);
      const unit = match ? BYTE_UNITS[(match[2] ?? '').toLowerCase()] : undefined;
      const n = match && unit !== undefined ? Number(match[1]) * unit : Number.NaN;
      if (!Number.isSafeInteger(n) || n < 1) {
        ctx.addIssue({
          code: 'custom',
          message: `"${text}" is not a size (expected e.g. 1GiB, 256MiB or 1048576)`,
        });
        return z.NEVER;
      }
      return n;
    });

/** Text, trimmed; unset or blank is undefined. */
export const optionalText = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

/** What a value that is not a URL is told. */
export const URL_MESSAGE = 'is not a URL (expected e.g. http://127.0.0.1:8080)';
/** A URL, or undefined when unset or blank. */
export const optionalUrl = () =>
  optionalText.refine((v) => v === undefined || URL.canParse(v), { message: URL_MESSAGE });
/** A URL, `fallback` when unset. */
export const urlWithDefault = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .refine((v) => URL.canParse(v), { message: URL_MESSAGE });

/** The model endpoint: http(s), and no user name or password (the HTTP client refuses to send them). */
export const endpointUrl = (fallback: string) =>
  urlWithDefault(fallback).superRefine((v, ctx) => {
    if (!URL.canParse(v)) return;
    const url = new URL(v);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      ctx.addIssue({
        code: 'custom',
        message: `must start with http:// or https:// (not ${url.protocol}//)`,
      });
    } else if (url.username || url.password) {
      ctx.addIssue({
        code: 'custom',
        message:
          'holds a user name or password, which the HTTP client refuses to send; put the key in OPENAI_API_KEY',
      });
    }
  });

/** A Redis server: `redis://` or `rediss://` (TLS) only. The value is never echoed (it may hold a password). */
export const redisUrl = () =>
  optionalUrl().superRefine((v, ctx) => {
    if (v === undefined || !URL.canParse(v)) return;
    const scheme = new URL(v).protocol;
    if (scheme !== 'redis:' && scheme !== 'rediss:') {
      ctx.addIssue({
        code: 'custom',
        message: `must start with redis:// or rediss:// (not ${scheme}//), e.g. redis://127.0.0.1:6379`,
      });
    }
  });

/** A whole number from 1 to `max`, or undefined when unset or blank. */
export const optionalPositive = (max = Number.MAX_SAFE_INTEGER) =>
  optionalText.transform((v, ctx) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > max) {
      ctx.addIssue({ code: 'custom', message: `"${v}" must be a whole number from 1 to ${max}` });
      return z.NEVER;
    }
    return n;
  });

/** A comma-separated list (e.g. an allow-list of ids), blanks dropped; unset is empty. */
export const list = z
  .string()
  .optional()
  .transform((v) =>
    (v ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
  );

/**
 * A phone number in international form as digits, without `+` or separators (`+49 170 123-4567`
 * → `491701234567`: how WhatsApp names its users); undefined when it is not one.
 */
export function phoneDigits(text: string): string | undefined {
  const digits = text
    .trim()
    .replace(/[\s().-]/g, '')
    .replace(/^\+/, '');
  return /^[1-9]\d{6,14}$/.test(digits) ? digits : undefined;
}

/** An allow-list of phone numbers in international form (kept as digits, see {@link phoneDigits}) or `*`. */
export const phoneList = list.transform((entries, ctx) => {
  const out: string[] = [];
  for (const entry of entries) {
    const number = entry === '*' ? '*' : phoneDigits(entry);
    if (number === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `"${entry}" is not a phone number in international form (e.g. +491701234567) or *`,
      });
      return z.NEVER;
    }
    out.push(number);
  }
  return out;
});

/** true/false (1/0, yes/no, on/off), false when unset. */
export const boolean = z
  .string()
  .default('false')
  .transform((v, ctx) => {
    if (/^(1|true|yes|on)$/i.test(v)) return true;
    if (/^(0|false|no|off|)$/i.test(v)) return false;
    ctx.addIssue({ code: 'custom', message: `"${v}" is not true or false` });
    return z.NEVER;
  });

/** An on/off switch that may be unset (a per-channel switch then follows MAGPIE_STREAM). */
export const optionalSwitch = z
  .string()
  .optional()
  .transform((v, ctx) => {
    const text = (v ?? '').trim();
    if (text === '') return undefined;
    if (/^(1|true|yes|on)$/i.test(text)) return true;
    if (/^(0|false|no|off)$/i.test(text)) return false;
    ctx.addIssue({ code: 'custom', message: `"${v}" must be on or off` });
    return z.NEVER;
  });

/**
 * One of `values` (any case, trimmed), or undefined when unset or blank: for a variable
 * whose absence means something of its own (MAGPIE_EXEC_SANDBOX beside MAGPIE_SANDBOX_MODE).
 */
export const optionalChoice = <const T extends string>(values: readonly T[]) =>
  z
    .string()
    .optional()
    .transform((v, ctx): T | undefined => {
      const text = (v ?? '').trim().toLowerCase();
      if (text === '') return undefined;
      const found = values.find((value) => value === text);
      if (found !== undefined) return found;
      const allowed = `${values.slice(0, -1).join(', ')} or ${values[values.length - 1]}`;
      ctx.addIssue({ code: 'custom', message: `"${v}" must be ${allowed}` });
      return z.NEVER;
    });

/** One of `values` (any case, trimmed), `fallback` when unset or blank. */
export const choice = <const T extends string>(values: readonly T[], fallback: NoInfer<T>) =>
  optionalChoice(values).transform((v): T => v ?? fallback);

/** A daily window such as 08:00-22:00, or undefined. */
export const activeHours = optionalText.refine(
  (v) => v === undefined || /^([01]\d|2[0-3]):[0-5]\d-([01]\d|2[0-4]):[0-5]\d$/.test(v),
  {
    message: 'must look like 08:00-22:00',
  },
);

/** An IANA time zone, the machine's when unset. */
export const timeZone = z
  .string()
  .optional()
  .transform((v) => (v && v.trim() !== '' ? v.trim() : Intl.DateTimeFormat().resolvedOptions().timeZone))
  .refine(
    (tz) => {
      try {
        new Intl.DateTimeFormat('en-US', { timeZone: tz });
        return true;
      } catch {
        return false;
      }
    },
    { message: 'is not an IANA time zone (e.g. Europe/Lisbon)' },
  );

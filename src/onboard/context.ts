/**
 * What every step of `magpie onboard` shares: the flags, the values already in
 * `.env` (offered as defaults), the questions (none under `--yes`), where
 * progress is printed, and the variables the answers set. Also how a secret is
 * shown (its shape, never its value).
 */
import { ConfigError } from '../errors/index.js';
import { scrubCredentials } from '../log/redact.js';
import type { Prompter } from './prompts.js';

/** The command's flags, as parsed (see src/cli/commands/onboard.ts for their help). */
export interface OnboardFlags {
  'base-url'?: string | undefined;
  'api-key'?: string | undefined;
  model?: string | undefined;
  'web-search'?: string | undefined;
  'web-search-key'?: string | undefined;
  'web-search-url'?: string | undefined;
  workspace?: string | undefined;
  /** The channels' own flags (their descriptors' `onboard.flags`, e.g. `slack-token`). */
  [channelFlag: string]: string | undefined;
}

/** The state the steps read and add to. */
export interface StepContext {
  flags: OnboardFlags;
  /** The variables of the existing `.env` (empty when there is none). */
  existing: Readonly<Record<string, string>>;
  /** Undefined under `--yes`: a missing answer then fails instead of being asked. */
  prompter: Prompter | undefined;
  /** Progress lines ("✓ …") go here. */
  out: { write(text: string): unknown };
  /** How long to wait for the message to a bot that gives the user's id (where a channel captures it). */
  captureTimeoutMs: number;
  /** Variables to write, in the order they were answered. */
  updates: Record<string, string>;
}

/** magpie's own variables whose values are secrets (each channel names its own: `secretVariables`). */
export const CORE_SECRET_VARIABLES: readonly string[] = ['OPENAI_API_KEY', 'BRAVE_API_KEY', 'TAVILY_API_KEY'];

/**
 * A secret as it may be shown: a long one as its first three and last four
 * characters (`sk-…1234`), a short one as `…` and at most its last two.
 *
 * @example maskSecret('sk-proj-abcdefgh12345678') // 'sk-…5678'
 */
export function maskSecret(value: string): string {
  if (value === 'none') return value;
  if (value.length >= 16) return `${value.slice(0, 3)}…${value.slice(-4)}`;
  return value.length >= 8 ? `…${value.slice(-2)}` : '…';
}

/**
 * The value of a variable as the summary shows it: a secret masked, anything
 * else with a URL's password taken out.
 */
export function shownValue(secrets: ReadonlySet<string>, name: string, value: string): string {
  return secrets.has(name) ? maskSecret(value) : scrubCredentials(value);
}

/** The existing value of `name`, when set and not blank. */
export function existingValue(ctx: StepContext, name: string): string | undefined {
  const value = ctx.existing[name]?.trim();
  return value ? value : undefined;
}

/** The error for an answer `--yes` needs but was not given. */
export function missingFlag(flag: string, what: string): ConfigError {
  return new ConfigError(`--yes: ${flag} is required (${what})`);
}

/** Prints one progress line. */
export function progress(ctx: StepContext, line: string): void {
  ctx.out.write(`${line}\n`);
}

/**
 * A comma-separated id list merged with `add` (existing entries first, no
 * duplicates).
 *
 * @example mergeIds('111, @bob', '222') // '111,@bob,222'
 */
export function mergeIds(existing: string | undefined, add: string[]): string {
  const ids = (existing ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const id of add) if (!ids.includes(id)) ids.push(id);
  return ids.join(',');
}

/** Shared argument parsing for subcommands (node:util parseArgs), with one-line errors. */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { parseDuration } from '../config/index.js';
import { ConfigError } from '../errors/index.js';
import { WORKSPACE_FLAG } from './startup.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * Parses `argv` for a subcommand; an unknown or malformed flag becomes a
 * ConfigError (exit 2) naming the flag.
 */
export function parseCommandArgs<O extends Options>(
  command: string,
  argv: string[],
  options: O,
  allowPositionals = false,
) {
  try {
    return parseArgs({ args: argv, options, allowPositionals, strict: true });
  } catch (err) {
    throw new ConfigError(`magpie ${command}: ${(err as Error).message}; see "magpie ${command} --help"`);
  }
}

/** The flags of the commands that wait for the daemon's reply (`send`, `chat`). */
export const REPLY_FLAGS = {
  chat: { type: 'string' },
  agent: { type: 'string' },
  timeout: { type: 'string' },
  'no-stream': { type: 'boolean' },
  ...WORKSPACE_FLAG,
} as const;

/** How long `send` and `chat` wait for a reply when `--timeout` is not given. */
export const DEFAULT_REPLY_TIMEOUT_MS = 120_000;

/**
 * The `--timeout` of a subcommand in milliseconds (`defaultMs` when absent); a
 * value that is not a positive duration becomes a ConfigError naming the command.
 *
 * @example parseTimeoutFlag('send', '30s') // 30_000
 */
export function parseTimeoutFlag(
  command: string,
  value: string | undefined,
  defaultMs = DEFAULT_REPLY_TIMEOUT_MS,
): number {
  const ms = value === undefined ? defaultMs : parseDuration(value);
  if (ms === undefined || ms <= 0) {
    throw new ConfigError(`magpie ${command}: --timeout "${value}" is not a duration (e.g. 30s)`);
  }
  return ms;
}

/** Shared argument parsing for subcommands (node:util parseArgs), with one-line errors. */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { ConfigError } from '../errors/index.js';

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

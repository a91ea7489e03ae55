/**
 * The skeleton every subcommand shares: its flags parsed with one-line errors
 * (exit 2), `-h, --help` answered with its help text (exit 0) before anything
 * else runs, then the command's own work.
 */
import { ExitCode } from '../errors/index.js';
import { parseCommandArgs } from './args.js';

type Options = Parameters<typeof parseCommandArgs>[2];

/** `-h, --help`, which every command takes. */
const HELP_FLAG = { help: { type: 'boolean', short: 'h' } } as const;

/** Where a command writes. */
export interface CommandOut {
  write(text: string): unknown;
}

/** What a command writes to; tests pass their own. */
export interface CommandIO {
  out: CommandOut;
}

/** A command's parsed flags (`values`) and other words (`positionals`). */
export type CommandArgs<O extends Options> = ReturnType<typeof parseCommandArgs<O & typeof HELP_FLAG>>;

/** A subcommand: its command line and its work. */
export interface CommandDefinition<O extends Options, IO extends CommandIO> {
  /** The subcommand as typed after `magpie`; its errors name it. */
  name: string;
  /** What `--help` prints. */
  help: string;
  /** Its flags; `-h, --help` is added to them. */
  flags: O;
  /** Whether it takes words besides flags (`cron list`). @defaultValue false */
  positionals?: boolean;
  /** The work, once the flags are parsed; resolves with the exit code. */
  run(args: CommandArgs<O>, io: IO): Promise<number>;
}

/**
 * A subcommand's entry point: parses `argv` (a bad flag throws a ConfigError,
 * exit 2), prints the help to `io.out` for `--help` (exit 0), else runs the
 * command. `io` defaults to the process's stdout (so any field of IO but
 * `out` must be optional).
 *
 * @example
 * export const run = defineCommand({
 *   name: 'status',
 *   help: HELP,
 *   flags: { json: { type: 'boolean' } },
 *   async run({ values }) { … return ExitCode.ok; },
 * });
 */
export function defineCommand<O extends Options, IO extends CommandIO = CommandIO>(
  command: CommandDefinition<O, IO>,
): (argv: string[], io?: IO) => Promise<number> {
  return async (argv, io = { out: process.stdout } as unknown as IO) => {
    const args = parseCommandArgs(
      command.name,
      argv,
      { ...command.flags, ...HELP_FLAG },
      command.positionals ?? false,
    );
    // The generic values type cannot name `help`; HELP_FLAG guarantees it.
    if ((args.values as { help?: boolean }).help === true) {
      io.out.write(`${command.help}\n`);
      return ExitCode.ok;
    }
    return command.run(args, io);
  };
}

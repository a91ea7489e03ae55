/**
 * The one rule for reading a chat command. The router (router.ts) applies it
 * once on the way in; the agent asks the router again for a message that
 * reaches its turn:
 *
 * - a command is the whole message: `/word`, optionally `@botname` straight
 *   after it (Telegram's form), optionally one line of arguments after a space;
 * - the word is matched without regard to case (`/STOP` is `/stop`);
 * - whitespace around the message does not matter; a second line makes it
 *   ordinary text (`/new\nwrite me a poem` goes to the model);
 * - only the words in the command table ({@link COMMANDS}, names and aliases:
 *   `/start` means /help) are commands; `stop`, `/stopp`, `/usr/bin` and
 *   `use /stop` are text.
 *
 * Arguments are passed on; only /model uses them, the others ignore them, so
 * `/stop now` stops.
 */
import { COMMANDS, type CommandName } from './list.js';

/** A `/word` at the start of a message, whether or not it is one of ours. */
export interface CommandWord {
  /** The word, lower-case, without the slash. */
  word: string;
  /** The bot named after `@`, as written. */
  target?: string;
  /** The rest of the line, trimmed; absent when empty. */
  argument?: string;
}

/** A recognised command. */
export interface ParsedCommand {
  name: CommandName;
  /** The bot named after `@`, as written. */
  target?: string;
  /** The rest of the line, trimmed; absent when empty. */
  argument?: string;
}

/** Every name and alias of the table → the command's name. */
const BY_WORD: ReadonlyMap<string, CommandName> = new Map(
  COMMANDS.flatMap(
    (c): Array<[string, CommandName]> => [
      [c.command, c.command],
      ...('aliases' in c ? c.aliases.map((a): [string, CommandName] => [a, c.command]) : []),
    ],
  ),
);

/** `/word`, `@target` (Telegram: 5–32 letters, digits, underscores), then one line. */
const COMMAND_LINE = /^\/([A-Za-z0-9_]+)(?:@([A-Za-z0-9_]+))?(?:[ \t]+([^\n]*))?$/;

/**
 * The `/word` a message consists of, known or not (Telegram uses this to drop
 * `/anything@otherbot`).
 *
 * @example commandWord('/Status@MagpieBot now') // { word: 'status', target: 'MagpieBot', argument: 'now' }
 */
export function commandWord(text: string): CommandWord | undefined {
  const match = COMMAND_LINE.exec(text.trim());
  if (!match) return undefined;
  const argument = match[3]?.trim();
  return {
    word: match[1]!.toLowerCase(),
    ...(match[2] ? { target: match[2] } : {}),
    ...(argument ? { argument } : {}),
  };
}

/**
 * The command a message is, or undefined for ordinary text. With `bot`, a
 * command addressed to another bot (`/stop@otherbot`) is not ours; the bot
 * name is compared without regard to case.
 *
 * @example parseCommand('/stop@magpie_bot', 'magpie_bot') // { name: 'stop', target: 'magpie_bot' }
 */
export function parseCommand(text: string, bot?: string): ParsedCommand | undefined {
  const found = commandWord(text);
  if (!found) return undefined;
  if (bot !== undefined && found.target !== undefined && found.target.toLowerCase() !== bot.toLowerCase())
    return undefined;
  const name = BY_WORD.get(found.word);
  if (!name) return undefined;
  return {
    name,
    ...(found.target !== undefined ? { target: found.target } : {}),
    ...(found.argument !== undefined ? { argument: found.argument } : {}),
  };
}

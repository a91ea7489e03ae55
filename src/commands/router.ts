/**
 * The command router: reads a message once (parse.ts, the one rule) against
 * the one table (list.ts) and says where it goes — ordinary text and in-turn
 * commands go to the session's turn, at-once commands are answered on the
 * way in. Channels reach it through their intake (src/channels/intake.ts);
 * the agent asks it about a message that reaches its turn.
 */
import { type AtOnceCommand, COMMANDS, type InTurnCommandName } from './list.js';
import { type ParsedCommand, parseCommand } from './parse.js';

/** Where a message goes. */
export type Route =
  /** Not a command (an unknown `/foo` included): the model reads it. */
  | { runs: 'text'; command?: undefined }
  /** A command the session's turn runs (src/agent/slash-commands.ts). */
  | { runs: 'in-turn'; command: ParsedCommand & { name: InTurnCommandName } }
  /** A command answered on the way in, without waiting for the turn. */
  | { runs: 'at-once'; command: ParsedCommand; entry: AtOnceCommand };

const TEXT: Route = { runs: 'text' };

/**
 * Where the message `text` goes. With `bot`, a command addressed to another
 * bot (`/stop@otherbot`) is text, not ours.
 *
 * @example routeCommand('/STOP now').runs // 'at-once'
 * @example routeCommand('/model gpt-4o') // { runs: 'in-turn', command: { name: 'model', argument: 'gpt-4o' } }
 */
export function routeCommand(text: string, bot?: string): Route {
  const command = parseCommand(text, bot);
  if (!command) return TEXT;
  const entry: (typeof COMMANDS)[number] | undefined = COMMANDS.find((c) => c.command === command.name);
  if (!entry) return TEXT;
  if (entry.runs === 'at-once') return { runs: 'at-once', command, entry };
  return { runs: 'in-turn', command: { ...command, name: entry.command } };
}

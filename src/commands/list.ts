/**
 * The chat commands every channel understands: one list, shown by /help and
 * registered with Telegram (setMyCommands). No imports, so channels, the bus,
 * the agent and the CLI can all read it without a cycle.
 */

/** A command's name, without the slash. */
export type CommandName = 'new' | 'stop' | 'status' | 'model' | 'help';

/** One command as /help lists it and Telegram's command menu shows it. */
export interface CommandInfo {
  command: CommandName;
  /** One line (Telegram allows 1–256 characters). */
  description: string;
}

/** The commands, in the order /help and Telegram's menu show them. */
export const COMMANDS: readonly CommandInfo[] = [
  { command: 'new', description: 'start a new conversation (the old one is kept on disk)' },
  { command: 'stop', description: 'stop what I am doing right now' },
  { command: 'status', description: 'model, conversation length and tokens used' },
  {
    command: 'model',
    description: 'list the models; /model NAME switches this chat, /model default goes back',
  },
  { command: 'help', description: 'this list' },
];

/** Other spellings: Telegram sends `/start` as a chat's first message, and it means /help. */
export const COMMAND_ALIASES: ReadonlyMap<string, CommandName> = new Map([['start', 'help']]);

/** What a channel answers to /stop: whether a running turn was cancelled. */
export function stopReply(stopped: boolean): string {
  return stopped ? 'Stopping.' : 'Nothing to stop.';
}

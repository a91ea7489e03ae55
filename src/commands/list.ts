/**
 * The command table: every chat command as one entry — its name, its help
 * line (shown by /help, registered with Telegram by setMyCommands) and where
 * it runs. Adding a command is adding an entry here:
 *
 * - `runs: 'at-once'`: the router answers it on the way in, before any turn
 *   (`run` gets the chat's small ports; /stop must not wait for the turn it stops);
 * - `runs: 'in-turn'`: it goes to the session's turn like a message and the
 *   agent runs it (its handler in src/agent/slash-commands.ts, which the
 *   compiler asks for).
 *
 * No imports, so channels, the agent and the CLI can all read it without a cycle.
 */

/** What an at-once command may do: the chat's running turn and an immediate answer. */
export interface AtOncePorts {
  /** Cancels the chat's running turn; true when one was running. Queued messages stay. */
  cancel(): Promise<boolean>;
  /** Answers in the chat at once. */
  reply(text: string): Promise<void>;
  /** The text after the command (`/approve K7QF2 always` → `K7QF2 always`). */
  argument?: string;
  /**
   * Answers the chat's approval question as the message's sender; resolves what to tell the
   * chat. Absent where no bus keeps questions.
   */
  approve?(command: 'approve' | 'deny', argument: string | undefined): Promise<string>;
}

interface EntryBase {
  /** The name, lower-case, without the slash. */
  readonly command: string;
  /** One line (Telegram allows 1–256 characters). */
  readonly description: string;
  /** Other spellings (Telegram sends `/start` as a chat's first message; it means /help). */
  readonly aliases?: readonly string[];
}

/** A command the session's turn runs (it needs the session). */
export interface InTurnCommand extends EntryBase {
  readonly runs: 'in-turn';
}

/** A command answered on the way in, without waiting for the chat's turn. */
export interface AtOnceCommand extends EntryBase {
  readonly runs: 'at-once';
  readonly run: (ports: AtOncePorts) => Promise<void>;
  /**
   * The answer when it reaches a turn anyway: `magpie agent` has no intake, and
   * its lines wait for the running turn to end.
   */
  readonly inTurnReply: string;
}

export type CommandEntry = InTurnCommand | AtOnceCommand;

/** `/approve` and `/deny`: answered on the way in, settling the chat's approval question. */
function answerCommand<C extends 'approve' | 'deny'>(command: C, description: string) {
  const nothing = `There is nothing to ${command} here`;
  return {
    command,
    description,
    runs: 'at-once',
    run: async ({ approve, argument, reply }: AtOncePorts) =>
      reply(approve ? await approve(command, argument) : `${nothing}.`),
    inTurnReply: `${nothing}: questions are answered in a chat with the daemon.`,
  } as const;
}

/** The commands, in the order /help and Telegram's menu show them. */
export const COMMANDS = [
  {
    command: 'new',
    description: 'start a new conversation (the old one is kept on disk)',
    runs: 'in-turn',
  },
  {
    command: 'stop',
    description: 'stop what I am doing right now',
    runs: 'at-once',
    // Whether a running turn was cancelled; the turn itself then ends with "Stopped.".
    run: async ({ cancel, reply }) => reply((await cancel()) ? 'Stopping.' : 'Nothing to stop.'),
    inTurnReply: 'Nothing is running right now.',
  },
  answerCommand('approve', 'allow what magpie asked about: /approve CODE, or /approve CODE always'),
  answerCommand('deny', 'refuse what magpie asked about: /deny CODE'),
  {
    command: 'approvals',
    description: 'the "always allow" rules of this chat; /approvals remove N drops one',
    runs: 'in-turn',
  },
  {
    command: 'forget',
    description: 'remove from long-term memory what holds all these words: /forget WORDS (undoable)',
    runs: 'in-turn',
  },
  { command: 'status', description: 'model, conversation length and tokens used', runs: 'in-turn' },
  {
    command: 'usage',
    description: "today's and this month's tokens and cost, this chat's and everything's, and the limits",
    runs: 'in-turn',
  },
  {
    command: 'model',
    description: 'list the models; /model NAME switches this chat, /model default goes back',
    runs: 'in-turn',
  },
  {
    command: 'voice',
    description: 'spoken answers: /voice on, /voice off, or /voice auto (a voice message gets one)',
    runs: 'in-turn',
  },
  { command: 'help', description: 'this list', aliases: ['start'], runs: 'in-turn' },
] as const satisfies readonly CommandEntry[];

/** A command's name, without the slash. */
export type CommandName = (typeof COMMANDS)[number]['command'];

/** The commands the session's turn runs; the agent has a handler for each. */
export type InTurnCommandName = Extract<(typeof COMMANDS)[number], { runs: 'in-turn' }>['command'];

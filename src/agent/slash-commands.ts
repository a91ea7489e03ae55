/**
 * Slash commands every channel shares: /new, /status, /help (and /stop when it
 * reaches the agent with nothing running). A command is the whole message.
 */
import type { SessionStore } from '../sessions/types.js';
import { estimateTokens } from './summarize.js';

export type SlashCommand = 'new' | 'status' | 'help' | 'stop';

/** The commands as listed by /help (and registered with Telegram's setMyCommands). */
export const SLASH_COMMANDS: readonly { command: SlashCommand; description: string }[] = [
  { command: 'new', description: 'start a new conversation (the old one is kept on disk)' },
  { command: 'stop', description: 'stop what I am doing right now' },
  { command: 'status', description: 'model, conversation length and tokens used' },
  { command: 'help', description: 'this list' },
];

/**
 * The command a message consists of, or undefined. Accepts Telegram's
 * `/cmd@botname` form; `/start` (Telegram's first message) means /help.
 */
export function parseSlashCommand(content: string): SlashCommand | undefined {
  const match = /^\/([a-z]+)(?:@[A-Za-z0-9_]+)?$/i.exec(content.trim());
  const name = match?.[1]?.toLowerCase();
  if (name === 'start') return 'help';
  return SLASH_COMMANDS.some((c) => c.command === name) ? (name as SlashCommand) : undefined;
}

/** Tokens the endpoint reported for a session (kept by the running process). */
export interface SessionUsage {
  promptTokens: number;
  completionTokens: number;
}

export interface SlashCommandContext {
  sessionKey: string;
  sessions: SessionStore;
  model: string;
  /** Reported usage this process has seen for the session, if any. */
  usage: SessionUsage | undefined;
}

/** Runs a command and returns the reply text. */
export async function runSlashCommand(command: SlashCommand, ctx: SlashCommandContext): Promise<string> {
  switch (command) {
    case 'new': {
      await ctx.sessions.reset(ctx.sessionKey);
      return 'Started a new conversation.';
    }
    case 'status':
      return statusText(ctx);
    case 'stop':
      return 'Nothing is running right now.';
    case 'help':
      return ['Commands:', ...SLASH_COMMANDS.map((c) => `/${c.command} — ${c.description}`)].join('\n');
  }
}

async function statusText(ctx: SlashCommandContext): Promise<string> {
  const [history, context, summary] = await Promise.all([
    ctx.sessions.getHistory(ctx.sessionKey),
    ctx.sessions.getContextHistory(ctx.sessionKey),
    ctx.sessions.getSummary(ctx.sessionKey),
  ]);
  const contextTokens = estimateTokens(context) + Math.ceil((summary?.length ?? 0) / 4);
  const used = ctx.usage
    ? `${ctx.usage.promptTokens + ctx.usage.completionTokens} (${ctx.usage.promptTokens} in, ${ctx.usage.completionTokens} out)`
    : `~${estimateTokens(history)} (estimated from the history)`;
  return [
    `Model: ${ctx.model}`,
    `Session: ${ctx.sessionKey}, ${history.length} message(s)${summary ? ', older ones summarised' : ''}`,
    `Tokens used this session: ${used}`,
    `Context now: ~${contextTokens} tokens`,
  ].join('\n');
}

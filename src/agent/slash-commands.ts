/**
 * Slash commands every channel shares: /new, /status, /help (and /stop when it
 * reaches the agent with nothing running). A command is the whole message.
 */
import type { SessionStore } from '../sessions/types.js';
import { estimateTokens } from './summarize.js';
import { describeCounts, type TokenPrices, usageOfEntries } from './token-usage.js';

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

export interface SlashCommandContext {
  sessionKey: string;
  sessions: SessionStore;
  model: string;
  /** Prices per million tokens: /status adds an estimated cost. */
  prices?: TokenPrices;
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
  // Each turn's counts are stored with its reply, so every worker (and `magpie agent`) sees them all.
  const usage = usageOfEntries(history);
  const used = usage
    ? describeCounts(usage, ctx.prices)
    : `~${estimateTokens(history)} (estimated from the history; the endpoint reported none)`;
  return [
    `Model: ${ctx.model}`,
    `Session: ${ctx.sessionKey}, ${history.length} message(s)${summary ? ', older ones summarised' : ''}`,
    `Tokens this conversation: ${used}`,
    `Context now: ~${contextTokens} tokens`,
  ].join('\n');
}

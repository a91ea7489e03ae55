/**
 * Slash commands every channel shares: /new, /status, /model, /help (and /stop
 * when it reaches the agent with nothing running). A command is the whole
 * message; only /model takes an argument (model-command.ts).
 */
import type { ChatMessage } from '../providers/types.js';
import type { SessionStore } from '../sessions/types.js';
import { type ModelCommandContext, resolveChoice, runModelCommand } from './model-command.js';
import { estimateTokens } from './summarize.js';
import { describeCounts, type TokenPrices, usageOfEntries } from './token-usage.js';

export type SlashCommand = 'new' | 'status' | 'model' | 'help' | 'stop';

/** The commands as listed by /help (and registered with Telegram's setMyCommands). */
export const SLASH_COMMANDS: readonly { command: SlashCommand; description: string }[] = [
  { command: 'new', description: 'start a new conversation (the old one is kept on disk)' },
  { command: 'stop', description: 'stop what I am doing right now' },
  { command: 'status', description: 'model, conversation length and tokens used' },
  {
    command: 'model',
    description: 'list the models; /model NAME switches this chat, /model default goes back',
  },
  { command: 'help', description: 'this list' },
];

/**
 * The command a message consists of, or undefined. Accepts Telegram's
 * `/cmd@botname` form; `/start` (Telegram's first message) means /help.
 */
export function parseSlashCommand(content: string): SlashCommand | undefined {
  const match = COMMAND.exec(content.trim());
  const name = match?.[1]?.toLowerCase();
  if (match?.[2] !== undefined && name !== 'model') return undefined;
  if (name === 'start') return 'help';
  return SLASH_COMMANDS.some((c) => c.command === name) ? (name as SlashCommand) : undefined;
}

/** The text after a command (`/model llama3.1` → `llama3.1`), or undefined. */
export function slashArgument(content: string): string | undefined {
  return COMMAND.exec(content.trim())?.[2]?.trim() || undefined;
}

/** `/cmd`, `/cmd@botname`, then an argument on the same line. */
const COMMAND = /^\/([a-z]+)(?:@[A-Za-z0-9_]+)?(?:[ \t]+(\S[^\n]*))?$/i;

export interface SlashCommandContext {
  sessionKey: string;
  sessions: SessionStore;
  /** The default model. */
  model: string;
  /** What follows the command (/model's model name). */
  argument?: string;
  /** The configured models and the chats' choices, for /model and /status. @defaultValue just `model` */
  models?: Omit<ModelCommandContext, 'sessionKey'>;
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
    case 'model':
      return runModelCommand(ctx.argument, modelContext(ctx));
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
    ...(await modelLines(ctx, history)),
    `Session: ${ctx.sessionKey}, ${history.length} message(s)${summary ? ', older ones summarised' : ''}`,
    `Tokens this conversation: ${used}`,
    `Context now: ~${contextTokens} tokens`,
  ].join('\n');
}

function modelContext(ctx: SlashCommandContext): ModelCommandContext {
  const fallback = { id: ctx.model, model: ctx.model, baseURL: '', vision: false };
  return {
    sessionKey: ctx.sessionKey,
    ...(ctx.models ?? { models: [fallback], choices: { get: async () => undefined, set: async () => {} } }),
  };
}

/** `Model: X (this chat's choice)`, which model gave the last answer, and the models resting after failures. */
async function modelLines(ctx: SlashCommandContext, history: readonly ChatMessage[]): Promise<string[]> {
  if (!ctx.models) return [`Model: ${ctx.model}`];
  const { models, choices, availability } = ctx.models;
  const chosen = resolveChoice(await choices.get(ctx.sessionKey), models);
  const lines = [`Model: ${chosen ?? models[0]?.id ?? ctx.model}${chosen ? " (this chat's choice)" : ''}`];
  const last = lastAnsweredBy(history);
  if (last && last !== (chosen ?? models[0]?.id)) lines.push(`Last answer by: ${last}`);
  for (const a of (await availability?.()) ?? []) {
    if (a.cooling) {
      const times = a.cooling.failures === 1 ? 'once' : `${a.cooling.failures} times`;
      lines.push(`Resting: ${a.model.id} for ${Math.ceil(a.cooling.leftMs / 1000)}s more (failed ${times})`);
    }
  }
  return lines;
}

/** The model id stored with the newest answer (see AgentLoop: the final message's `model`). */
function lastAnsweredBy(history: readonly ChatMessage[]): string | undefined {
  for (let i = history.length - 1; i >= 0; i -= 1) {
    const model = (history[i] as { model?: unknown }).model;
    if (history[i]?.role === 'assistant' && typeof model === 'string') return model;
  }
  return undefined;
}

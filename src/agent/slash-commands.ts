/**
 * Running the chat commands that need the session: /new, /status, /model,
 * /help — one handler per in-turn command of the table (src/commands/list.ts;
 * the compiler asks for a handler when an entry is added). Which messages are
 * commands, and where they run, is the router's decision (src/commands/router.ts);
 * an at-once command reaching a turn anyway (`magpie agent` has no intake)
 * gets its table entry's `inTurnReply`. Only /model uses its argument
 * (model-command.ts).
 */
import type { ApprovalRules } from '../approvals/ports.js';
import { ruleLabel } from '../approvals/question.js';
import { COMMANDS, type InTurnCommandName } from '../commands/list.js';
import type { Route } from '../commands/router.js';
import { describeCounts, type TokenPrices } from '../messages/token-counts.js';
import type { ChatMessage } from '../providers/types.js';
import type { SessionStore } from '../sessions/types.js';
import { MemoryVoiceChoiceStore, runVoiceCommand, type VoiceChoiceStore } from '../voice/voice-choice.js';
import { type ModelCommandContext, resolveChoice, runModelCommand } from './model-command.js';
import type { UsageView } from './ports.js';
import { estimateTokens } from './summarize.js';
import { usageOfEntries } from './token-usage.js';

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
  /** The chat's "always allow" rules, for /approvals (absent: approvals are off). */
  approvalRules?: ApprovalRules;
  /** The chat the command came from (`<channel>:<chatId>`), whose rules /approvals shows. */
  chatKey?: string;
  /** /usage's text for a session (the budget's spend records); absent: usage is not kept here. */
  usage?: UsageView;
  /** /forget: removes what matches the words from MEMORY.md and says what it did (memory/history/forget.ts). */
  forget?: (argument: string | undefined) => Promise<string>;
  /** /voice's store and whether an engine speaks. @defaultValue choices forgotten, nothing spoken */
  voice?: VoiceCommandPorts;
}

/** What /voice needs: where chats' choices live and whether anything speaks (MAGPIE_TTS ≠ off). */
export interface VoiceCommandPorts {
  choices: VoiceChoiceStore;
  speaks: boolean;
}

/** The in-turn commands' handlers: each returns the reply text. */
const HANDLERS: { [N in InTurnCommandName]: (ctx: SlashCommandContext) => Promise<string> } = {
  new: async (ctx) => {
    await ctx.sessions.reset(ctx.sessionKey);
    return 'Started a new conversation.';
  },
  status: (ctx) => statusText(ctx),
  model: (ctx) => runModelCommand(ctx.argument, modelContext(ctx)),
  approvals: (ctx) => approvalsCommand(ctx),
  forget: async (ctx) =>
    ctx.forget
      ? ctx.forget(ctx.argument)
      : 'Memory cannot be changed from this chat (no memory history here).',
  usage: async (ctx) =>
    ctx.usage
      ? ctx.usage.usageText(ctx.sessionKey)
      : 'Usage is kept by the magpie daemon (magpie start); this session runs without it. /status shows its tokens.',
  voice: (ctx) =>
    runVoiceCommand(ctx.argument, {
      sessionKey: ctx.sessionKey,
      ...(ctx.voice ?? { choices: new MemoryVoiceChoiceStore(), speaks: false }),
    }),
  help: async () => ['Commands:', ...COMMANDS.map((c) => `/${c.command} — ${c.description}`)].join('\n'),
};

/** A command the router found, as it reaches the turn. */
export type RoutedCommand = Exclude<Route, { runs: 'text' }>;

/** Runs a command in the turn and returns the reply text. */
export async function runSlashCommand(routed: RoutedCommand, ctx: SlashCommandContext): Promise<string> {
  if (routed.runs === 'at-once') return routed.entry.inTurnReply;
  return HANDLERS[routed.command.name](ctx);
}

/** `/approvals`: the chat's rules, numbered; `/approvals remove N` drops rule N. */
async function approvalsCommand(ctx: SlashCommandContext): Promise<string> {
  const store = ctx.approvalRules;
  if (!store || !ctx.chatKey) return 'Approvals are off here: nothing asks, so there are no rules.';
  const rules = await store.rules(ctx.chatKey);
  const argument = ctx.argument?.trim() ?? '';
  if (argument !== '') {
    const match = /^remove\s+(\d+)$/i.exec(argument);
    const rule = match ? rules[Number(match[1]) - 1] : undefined;
    if (!rule) return `Say /approvals remove N, with N from the list (1–${rules.length || 1}).`;
    await store.removeRule(ctx.chatKey, rule);
    return `Removed: ${ruleLabel(rule)}. magpie asks again before that.`;
  }
  if (rules.length === 0) return 'No "always allow" rules in this chat: magpie asks before every risky step.';
  return [
    'Allowed without asking in this chat (unless the turn read a web page or other outside text first):',
    ...rules.map((r, i) => `${i + 1}. ${ruleLabel(r)}`),
    'Remove one with /approvals remove N.',
  ].join('\n');
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

/**
 * Summarisation of long sessions: estimateTokens, summarizeBatch,
 * summarizeSession, maybeSummarize. Older messages of the context history are
 * folded into the session summary (which rides in the system prompt); the last
 * few messages stay, tool calls are never split from their results, and the
 * log on disk is never rewritten.
 */
import type { Logger } from '../log/index.js';
import type { ChatMessage, LLMProvider } from '../providers/types.js';
import type { SessionEntry, SessionStore } from '../sessions/types.js';

/** The system prompt of every summary request (tests recognise summary calls by it). */
export const SUMMARY_SYSTEM_PROMPT =
  'You maintain the running summary of a conversation between a user and their assistant, magpie. ' +
  'Merge the existing summary (if any) with the new messages into one concise summary in plain text. ' +
  'Keep facts about the user, decisions, open tasks, promises, names, numbers and file paths; drop chit-chat. ' +
  'Write only the summary.';

/** Tokens counted for one image part (they cost far less than their data URL's length). */
const IMAGE_TOKENS = 800;
/** Characters of one message kept in a summary transcript. */
const TRANSCRIPT_CHARS_PER_MESSAGE = 2_000;

/**
 * A rough token count without a tokenizer: ~4 characters a token plus 4 tokens
 * of framing per message (a common heuristic).
 */
export function estimateTokens(messages: readonly ChatMessage[]): number {
  let chars = 0;
  let extra = 0;
  for (const m of messages) {
    extra += 4;
    if (typeof m.content === 'string') chars += m.content.length;
    else if (Array.isArray(m.content)) {
      for (const part of m.content) {
        if (part.type === 'text') chars += part.text.length;
        else extra += IMAGE_TOKENS;
      }
    }
    if (m.role === 'assistant' && m.toolCalls) {
      for (const call of m.toolCalls) chars += call.name.length + call.arguments.length + 16;
    }
  }
  return Math.ceil(chars / 4) + extra;
}

/**
 * Where the kept tail of `messages` starts: at most `keepLast` messages kept,
 * moved earlier so that it never starts at a tool result (which would split
 * it from its assistant call). 0 means nothing can be summarised.
 */
export function chooseCut(messages: readonly ChatMessage[], keepLast: number): number {
  let cut = Math.max(0, messages.length - Math.max(0, keepLast));
  while (cut > 0 && messages[cut]?.role === 'tool') cut -= 1;
  return cut;
}

export interface SummarizeBatchOptions {
  model?: string;
  signal?: AbortSignal;
}

/** Asks the model for one summary of `messages`, merged with `existingSummary`. */
export async function summarizeBatch(
  provider: LLMProvider,
  messages: readonly ChatMessage[],
  existingSummary: string | undefined,
  options: SummarizeBatchOptions = {},
): Promise<string> {
  const parts: string[] = [];
  if (existingSummary) parts.push(`Existing summary:\n${existingSummary}`);
  parts.push(`New messages:\n${transcript(messages)}`);
  const response = await provider.chat({
    messages: [
      { role: 'system', content: SUMMARY_SYSTEM_PROMPT },
      { role: 'user', content: parts.join('\n\n') },
    ],
    ...(options.model ? { model: options.model } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return response.content.trim();
}

export interface SummarizeSessionOptions {
  sessions: SessionStore;
  provider: LLMProvider;
  key: string;
  logger: Logger;
  /** Messages kept after the summary. @defaultValue 8 */
  keepLastMessages?: number;
  /** Largest slice (estimated tokens) sent in one summary request. @defaultValue 12_000 */
  batchTokens?: number;
  model?: string;
  signal?: AbortSignal;
}

/**
 * Folds everything but the last few messages of the session's context history
 * into its summary (in batches when large), then marks them summarised with
 * `sessions.setSummary`. Returns false when there was nothing to summarise.
 */
export async function summarizeSession(options: SummarizeSessionOptions): Promise<boolean> {
  const { sessions, provider, key, logger } = options;
  const keepLast = options.keepLastMessages ?? 8;
  const batchTokens = options.batchTokens ?? 12_000;
  const [log, context, existing] = await Promise.all([
    sessions.getHistory(key),
    sessions.getContextHistory(key),
    sessions.getSummary(key),
  ]);
  const cut = chooseCut(context, keepLast);
  if (cut === 0) return false;
  let summary = existing;
  for (const batch of batches(context.slice(0, cut), batchTokens)) {
    const next = await summarizeBatch(provider, batch, summary, {
      ...(options.model ? { model: options.model } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (next === '') {
      logger.warn({ session: key }, 'the model returned an empty summary; session left as it was');
      return false;
    }
    summary = next;
  }
  const keepFrom = logIndexOf(log, context, cut);
  await sessions.setSummary(key, summary ?? '', keepFrom);
  logger.info({ session: key, summarised: cut, kept: context.length - cut, keepFrom }, 'session summarised');
  return true;
}

export interface MaybeSummarizeOptions extends SummarizeSessionOptions {
  /** Summarise when the context history (plus summary) passes this many estimated tokens. */
  budgetTokens: number;
  /** Runs once the session is known to be over budget, before the summary (the memory flush). */
  beforeSummary?: () => Promise<void>;
}

/** Summarises the session when its context history has grown past the budget. */
export async function maybeSummarize(options: MaybeSummarizeOptions): Promise<boolean> {
  const [context, summary] = await Promise.all([
    options.sessions.getContextHistory(options.key),
    options.sessions.getSummary(options.key),
  ]);
  const tokens = estimateTokens(context) + Math.ceil((summary?.length ?? 0) / 4);
  if (tokens <= options.budgetTokens) return false;
  await options.beforeSummary?.();
  return summarizeSession(options);
}

/**
 * The index in the full log of `context[i]`: the context history is the log's
 * tail from the last summary point with broken tool calls removed, so it is
 * matched backwards as a subsequence of the log.
 */
export function logIndexOf(
  log: readonly SessionEntry[],
  context: readonly SessionEntry[],
  i: number,
): number {
  if (i >= context.length) return log.length;
  let j = log.length - 1;
  for (let k = context.length - 1; k >= i; k -= 1) {
    const want = identity(context[k]!);
    while (j >= 0 && identity(log[j]!) !== want) j -= 1;
    if (j < 0) return log.length - (context.length - i);
    if (k > i) j -= 1;
  }
  return j;
}

function identity(entry: SessionEntry): string {
  return JSON.stringify([entry.role, entry.ts ?? '', entry.content]);
}

function* batches(messages: readonly ChatMessage[], maxTokens: number): Generator<ChatMessage[]> {
  let current: ChatMessage[] = [];
  let tokens = 0;
  for (const m of messages) {
    const t = estimateTokens([m]);
    if (current.length > 0 && tokens + t > maxTokens) {
      yield current;
      current = [];
      tokens = 0;
    }
    current.push(m);
    tokens += t;
  }
  if (current.length > 0) yield current;
}

/** A plain-text transcript of messages for the summariser, each capped. */
function transcript(messages: readonly ChatMessage[]): string {
  return messages.map((m) => clip(`${speaker(m)}: ${text(m)}`)).join('\n');
}

function speaker(m: ChatMessage): string {
  return m.role === 'tool' ? `tool result${m.name ? ` (${m.name})` : ''}` : m.role;
}

function text(m: ChatMessage): string {
  if (m.role === 'assistant') {
    const calls = (m.toolCalls ?? []).map((c) => `[called ${c.name}(${c.arguments})]`);
    return [m.content ?? '', ...calls].filter((t) => t !== '').join(' ');
  }
  if (typeof m.content === 'string') return m.content;
  return m.content.map((p) => (p.type === 'text' ? p.text : '[image]')).join(' ');
}

function clip(line: string): string {
  return line.length <= TRANSCRIPT_CHARS_PER_MESSAGE
    ? line
    : `${line.slice(0, TRANSCRIPT_CHARS_PER_MESSAGE)} […]`;
}

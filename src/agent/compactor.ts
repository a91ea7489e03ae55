/**
 * Compaction inside a running turn: after a context-length error (keep 4,
 * then 2 messages), and before a call that would pass 95% of the window
 * (memory flush first, then keep what fits in ~80%). Also runs the silent
 * memory-flush turn the background summariser calls before it compacts.
 */
import type { Logger } from '../log/index.js';
import type { ChatMessage, LLMProvider } from '../providers/types.js';
import type { SessionStore } from '../sessions/types.js';
import { runMemoryFlush } from './hooks/memory-flush.js';
import type { LoopContextBuilder } from './loop-options.js';
import { chooseCut, estimateTokens, summarizeBatch } from './summarize.js';
import type { SessionSummarizer } from './summarizer.js';
import { budgetLevel, keepWithin, requestTokens, TARGET_FRACTION } from './token-budget.js';
import type { LoopTools } from './tool-batch.js';

/** The parts of a running turn compaction reads and replaces (AgentLoop's TurnRun satisfies it). */
export interface CompactableRun {
  req: { sessionKey: string; noHistory?: boolean };
  history: ChatMessage[];
  summary: string | undefined;
  turn: ChatMessage[];
  signal: AbortSignal;
  log: Logger;
}

export interface TurnCompactorOptions {
  provider: LLMProvider;
  sessions: SessionStore;
  summarizer: SessionSummarizer;
  context: LoopContextBuilder;
  /** Tools of the memory-flush turn. */
  flushTools: LoopTools;
  workspace: string;
  logger: Logger;
  contextTokens: number;
  keepLastMessages: number;
  /** Run the memory flush before compacting. */
  memoryFlush: boolean;
  model?: string;
}

export class TurnCompactor {
  readonly #o: TurnCompactorOptions;

  constructor(options: TurnCompactorOptions) {
    this.#o = options;
  }

  /**
   * Forced compaction after a context-length error, keeping fewer messages on
   * each attempt (4, then 2). False when nothing could be shrunk.
   */
  async afterContextError(run: CompactableRun, attempt: number): Promise<boolean> {
    const keep = Math.max(1, Math.floor(Math.min(this.#o.keepLastMessages, 4) / 2 ** (attempt - 1)));
    return this.keeping(run, keep);
  }

  /**
   * Before a call over 95% of the window: flush memory (when enabled), then
   * fold older messages into the summary, keeping what fits in ~80%; once
   * more keeping a single message if that was not enough. `rebuild` makes
   * the request again from the run; `limit` is the window of the model the
   * call goes to (a smaller fallback's, while the first choice rests).
   */
  async toBudget(
    run: CompactableRun,
    messages: ChatMessage[],
    tokens: number,
    rebuild: () => Promise<ChatMessage[]>,
    limit = this.#o.contextTokens,
  ): Promise<{ ok: boolean; messages: ChatMessage[]; tokens: number }> {
    run.log.warn({ tokens, limit }, 'context over 95% of the window; compacting before the call');
    if (this.#o.memoryFlush && !run.req.noHistory) await this.flushMemory(run.req.sessionKey, run.signal);
    let current = { messages, tokens };
    for (const attempt of [1, 2]) {
      const tail = [...run.history, ...run.turn];
      const fixed = current.tokens - estimateTokens(tail);
      const keep = attempt === 1 ? keepWithin(tail, limit * TARGET_FRACTION - fixed) : 1;
      if (!(await this.keeping(run, keep))) break;
      const rebuilt = await rebuild();
      current = { messages: rebuilt, tokens: requestTokens(rebuilt) };
      if (budgetLevel(current.tokens, limit) !== 'over') return { ok: true, ...current };
    }
    return { ok: false, ...current };
  }

  /** Folds all but the last `keep` messages into the summary; false when nothing could be shrunk. */
  async keeping(run: CompactableRun, keep: number): Promise<boolean> {
    if (run.req.noHistory) {
      const cut = chooseCut(run.turn, keep);
      if (cut === 0) return false;
      run.summary = await summarizeBatch(this.#o.provider, run.turn.slice(0, cut), run.summary, {
        ...(this.#o.model ? { model: this.#o.model } : {}),
      });
      run.turn = run.turn.slice(cut);
      return true;
    }
    const key = run.req.sessionKey;
    const done = await this.#o.summarizer.compact(key, keep, run.signal);
    if (!done) return false;
    [run.history, run.summary] = await Promise.all([
      this.#o.sessions.getContextHistory(key),
      this.#o.sessions.getSummary(key),
    ]);
    run.turn = [];
    return true;
  }

  /**
   * The silent memory-flush turn before a session is compacted: the model
   * sees the session's context history and the flush prompt; nothing it says
   * is delivered or stored.
   */
  async flushMemory(sessionKey: string, signal?: AbortSignal): Promise<void> {
    const [history, summary] = await Promise.all([
      this.#o.sessions.getContextHistory(sessionKey),
      this.#o.sessions.getSummary(sessionKey),
    ]);
    const colon = sessionKey.indexOf(':');
    await runMemoryFlush({
      provider: this.#o.provider,
      tools: this.#o.flushTools,
      context: this.#o.context,
      history,
      session: {
        channel: colon > 0 ? sessionKey.slice(0, colon) : 'cli',
        chatId: colon > 0 ? sessionKey.slice(colon + 1) : sessionKey,
        sessionKey,
        ...(summary ? { summary } : {}),
      },
      workspace: this.#o.workspace,
      logger: this.#o.logger.child({ session: sessionKey }),
      ...(this.#o.model ? { model: this.#o.model } : {}),
      ...(signal ? { signal } : {}),
    });
  }
}

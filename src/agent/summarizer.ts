/**
 * SessionSummarizer: runs summaries for the agent loop, at most one at a time
 * per session — in the background after a turn when the session passed its
 * budget, or forced (awaited) after a context-length error.
 */
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import type { LLMProvider } from '../providers/types.js';
import type { SessionStore } from '../sessions/types.js';
import { maybeSummarize, summarizeSession } from './summarize.js';

export interface SessionSummarizerOptions {
  provider: LLMProvider;
  sessions: SessionStore;
  logger: Logger;
  /** Summarise in the background past this many estimated tokens of context history. */
  budgetTokens: number;
  /** Messages kept verbatim after a background summary. */
  keepLastMessages: number;
  /** The model for summary requests; the provider's default when unset. */
  model?: string;
  /**
   * Runs before a background summary of an over-budget session (the memory
   * flush turn). Its failure is logged and the summary still runs.
   */
  beforeSummary?: (key: string) => Promise<void>;
}

export class SessionSummarizer {
  readonly #o: SessionSummarizerOptions;
  readonly #running = new Map<string, Promise<void>>();

  constructor(options: SessionSummarizerOptions) {
    this.#o = options;
  }

  /** Starts a background summary of the session if it is over budget; never throws, never blocks. */
  schedule(key: string): void {
    if (this.#running.has(key)) return;
    const before = this.#o.beforeSummary;
    const task = maybeSummarize({
      ...this.#base(key),
      budgetTokens: this.#o.budgetTokens,
      ...(before ? { beforeSummary: () => before(key) } : {}),
    })
      .then(() => undefined)
      .catch((err: unknown) => {
        this.#o.logger.warn({ session: key, err: describeError(err) }, 'background summary failed');
      })
      .finally(() => this.#running.delete(key));
    this.#running.set(key, task);
  }

  /** Resolves when the session's running summary (if any) has finished. */
  async settled(key: string): Promise<void> {
    await this.#running.get(key);
  }

  /** Resolves when every running summary has finished. */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.all(this.#running.values());
  }

  /** Summarises now, keeping `keepLast` messages; false when there was nothing to summarise. */
  async compact(key: string, keepLast: number, signal?: AbortSignal): Promise<boolean> {
    await this.settled(key);
    return summarizeSession({
      ...this.#base(key),
      keepLastMessages: keepLast,
      ...(signal ? { signal } : {}),
    });
  }

  #base(key: string) {
    return {
      sessions: this.#o.sessions,
      provider: this.#o.provider,
      key,
      logger: this.#o.logger,
      keepLastMessages: this.#o.keepLastMessages,
      batchTokens: Math.max(1_000, Math.floor(this.#o.budgetTokens / 2)),
      ...(this.#o.model ? { model: this.#o.model } : {}),
    };
  }
}

/**
 * The worker's half of live replies: collects a turn's text as the model
 * writes it (and a progress line while tools run) and publishes coalesced
 * snapshots on the bus (bus/live.ts). Nothing is published before
 * `firstAfterMs` from the first text, so a quick answer reaches the chat as
 * one message with no preview; after that at most one snapshot per
 * `intervalMs`. The gateway paces edits to each platform; this pace only
 * bounds Redis traffic.
 */
import { progressLine } from '../agent/progress-line.js';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { LIVE_TEXT_LIMIT, type LiveUpdate } from '../messages/live-update.js';
import type { ToolCall } from '../providers/types.js';

/** Where a turn's answer goes and how it is tagged: everything of a snapshot but its content. */
export type LiveBase = Pick<LiveUpdate, 'turn' | 'channel' | 'chatId' | 'threadId' | 'replyTo' | 'metadata'>;

export interface LivePublisherOptions {
  base: LiveBase;
  publish: (update: LiveUpdate) => Promise<void>;
  logger: Logger;
  /** Wait after the first text or tool before the first snapshot. @defaultValue 500 */
  firstAfterMs?: number;
  /** Least time between two snapshots. @defaultValue 250 */
  intervalMs?: number;
}

/** One turn's live snapshots. Feed it the turn's deltas, iterations and tools; `close()` before the final reply. */
export class LivePublisher {
  readonly #o: LivePublisherOptions;
  readonly #firstAfterMs: number;
  readonly #intervalMs: number;
  #text = '';
  #progress: string | undefined;
  #seq = 0;
  #startedAt: number | undefined;
  #lastAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #inFlight: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(options: LivePublisherOptions) {
    this.#o = options;
    this.#firstAfterMs = options.firstAfterMs ?? 500;
    this.#intervalMs = options.intervalMs ?? 250;
  }

  /** Model text as it arrives: it joins the current call's text and ends a progress line. */
  delta(text: string): void {
    if (this.#closed || text === '') return;
    this.#text += text;
    this.#progress = undefined;
    this.#schedule();
  }

  /** A new LLM call: its text replaces the previous call's (which led to tool calls). */
  iteration(n: number): void {
    if (n > 1) this.#text = '';
  }

  /** A tool starts: the preview shows what it does until the model writes again. */
  tool(call: ToolCall): void {
    if (this.#closed) return;
    this.#progress = progressLine(call);
    this.#schedule();
  }

  /** Snapshots published so far. */
  get published(): number {
    return this.#seq;
  }

  /** The text of the current call as written so far. */
  get text(): string {
    return this.#text;
  }

  /** Publishes nothing more; resolves once the last snapshot is out (so the final reply follows it). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#inFlight;
  }

  #schedule(): void {
    if (this.#timer) return;
    const now = Date.now();
    this.#startedAt ??= now;
    const due = this.#seq === 0 ? this.#startedAt + this.#firstAfterMs : this.#lastAt + this.#intervalMs;
    this.#timer = setTimeout(() => this.#flush(), Math.max(0, due - now));
  }

  #flush(): void {
    this.#timer = undefined;
    if (this.#closed || (this.#text === '' && this.#progress === undefined)) return;
    this.#lastAt = Date.now();
    const update: LiveUpdate = {
      ...this.#o.base,
      text: this.#text.slice(0, LIVE_TEXT_LIMIT),
      ...(this.#progress !== undefined ? { progress: this.#progress } : {}),
      seq: this.#seq++,
    };
    // One at a time, in order; a lost snapshot costs nothing (the next or the final reply covers it).
    this.#inFlight = this.#inFlight.then(() =>
      this.#o.publish(update).catch((err: unknown) => {
        this.#o.logger.debug({ err: describeError(err), turn: update.turn }, 'live snapshot not published');
      }),
    );
  }
}

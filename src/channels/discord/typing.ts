/**
 * Typing indicators: while a turn runs for a chat, POST typing now and every few
 * seconds (Discord shows it for ~10 s) until stopped, a reply is delivered, or a
 * safety cap passes. A failing typing call is logged and never breaks anything.
 */
import type { Logger } from '../../log/index.js';

export interface TypingOptions {
  /** Sends one typing indicator to a Discord channel id. */
  sendTyping: (channelId: string) => Promise<void>;
  logger: Logger;
  /** Time between typing calls. @defaultValue 8000 */
  intervalMs?: number;
  /** Typing stops by itself after this long (a lost stop event cannot type forever). @defaultValue 600000 */
  maxDurationMs?: number;
}

interface Active {
  timer: NodeJS.Timeout;
  startedAt: number;
}

/** Keeps one repeating typing indicator per Discord channel (a thread is its own channel). */
export class TypingIndicators {
  private readonly active = new Map<string, Active>();
  private readonly sendTyping: (channelId: string) => Promise<void>;
  private readonly logger: Logger;
  private readonly intervalMs: number;
  private readonly maxDurationMs: number;

  constructor(options: TypingOptions) {
    this.sendTyping = options.sendTyping;
    this.logger = options.logger;
    this.intervalMs = options.intervalMs ?? 8000;
    this.maxDurationMs = options.maxDurationMs ?? 600_000;
    if (this.intervalMs < 1 || this.maxDurationMs < 1)
      throw new RangeError('typing intervals must be positive');
  }

  /** Starts (or keeps) typing in `channelId`; the first call goes out at once. */
  start(channelId: string): void {
    const existing = this.active.get(channelId);
    if (existing) {
      existing.startedAt = Date.now();
      return;
    }
    const entry: Active = {
      startedAt: Date.now(),
      timer: setInterval(() => {
        if (Date.now() - entry.startedAt >= this.maxDurationMs) this.stop(channelId);
        else this.fire(channelId);
      }, this.intervalMs),
    };
    entry.timer.unref();
    this.active.set(channelId, entry);
    this.fire(channelId);
  }

  /** Stops typing in `channelId` (no-op when not typing). */
  stop(channelId: string): void {
    const entry = this.active.get(channelId);
    if (!entry) return;
    clearInterval(entry.timer);
    this.active.delete(channelId);
  }

  /** True while typing is shown in `channelId`. */
  isActive(channelId: string): boolean {
    return this.active.has(channelId);
  }

  /** Stops every indicator (shutdown). */
  stopAll(): void {
    for (const channelId of [...this.active.keys()]) this.stop(channelId);
  }

  private fire(channelId: string): void {
    this.sendTyping(channelId).catch((err: unknown) => {
      this.logger.warn({ err, channelId }, 'discord typing indicator failed');
    });
  }
}

/**
 * The typing indicator: `sendChatAction('typing')` now and every few seconds
 * until stopped, the reply is delivered, or a safety cap passes. A failing
 * chat action is logged and never breaks anything.
 */
import { describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';

export interface TypingOptions {
  /** Sends one chat action; rejections are logged. */
  sendAction: (chatId: string, threadId: string | undefined) => Promise<unknown>;
  logger: Logger;
  /** Telegram shows an action for ~5 s. @defaultValue 4000 */
  intervalMs?: number;
  /** Stops by itself after this long (a lost stop signal must not type forever). @defaultValue 600000 */
  maxDurationMs?: number;
}

interface Running {
  interval: NodeJS.Timeout;
  cap: NodeJS.Timeout;
}

/** Keeps one typing loop per chat (and forum topic). */
export class TypingIndicator {
  private readonly running = new Map<string, Running>();
  private readonly intervalMs: number;
  private readonly maxDurationMs: number;

  constructor(private readonly options: TypingOptions) {
    this.intervalMs = options.intervalMs ?? 4000;
    this.maxDurationMs = options.maxDurationMs ?? 10 * 60_000;
    if (this.intervalMs < 1 || this.maxDurationMs < 1)
      throw new RangeError('typing intervals must be positive');
  }

  /** Starts (or keeps) typing in a chat. */
  start(chatId: string, threadId?: string): void {
    const key = keyOf(chatId, threadId);
    if (this.running.has(key)) return;
    const tick = () => {
      this.options.sendAction(chatId, threadId).catch((err: unknown) => {
        this.options.logger.debug({ chatId, err: describeError(err) }, 'typing indicator failed');
      });
    };
    const interval = setInterval(tick, this.intervalMs);
    const cap = setTimeout(() => this.stop(chatId, threadId), this.maxDurationMs);
    interval.unref();
    cap.unref();
    this.running.set(key, { interval, cap });
    tick();
  }

  stop(chatId: string, threadId?: string): void {
    const key = keyOf(chatId, threadId);
    const entry = this.running.get(key);
    if (!entry) return;
    clearInterval(entry.interval);
    clearTimeout(entry.cap);
    this.running.delete(key);
  }

  isTyping(chatId: string, threadId?: string): boolean {
    return this.running.has(keyOf(chatId, threadId));
  }

  stopAll(): void {
    for (const entry of this.running.values()) {
      clearInterval(entry.interval);
      clearTimeout(entry.cap);
    }
    this.running.clear();
  }
}

function keyOf(chatId: string, threadId: string | undefined): string {
  return threadId ? `${chatId}/${threadId}` : chatId;
}

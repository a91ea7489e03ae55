/**
 * The typing loop every chat channel shares: while a turn runs in a chat, send
 * the platform's typing indicator now and every few seconds, until stopped,
 * the reply is delivered, or a safety cap passes (a lost stop signal must not
 * type forever). A failing indicator is logged and never breaks anything.
 */
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';

export interface TypingLoopOptions {
  logger: Logger;
  /**
   * Time between indicators: a little under how long the platform shows one
   * (Telegram ~5 s, Discord ~10 s). @defaultValue 4000
   */
  intervalMs?: number;
  /** Stops by itself this long after the last start(). @defaultValue 600000 */
  maxDurationMs?: number;
}

interface Running {
  interval: NodeJS.Timeout;
  cap: NodeJS.Timeout;
}

/** One repeating typing indicator per key (a chat, a forum topic, a thread). */
export class TypingLoop {
  private readonly running = new Map<string, Running>();
  private readonly logger: Logger;
  private readonly intervalMs: number;
  private readonly maxDurationMs: number;

  constructor(options: TypingLoopOptions) {
    this.logger = options.logger;
    this.intervalMs = options.intervalMs ?? 4000;
    this.maxDurationMs = options.maxDurationMs ?? 600_000;
    if (!(this.intervalMs >= 1) || !(this.maxDurationMs >= 1))
      throw new RangeError('typing intervals must be positive');
  }

  /**
   * Starts typing under `key`, calling `send` at once and then every interval.
   * Already typing: nothing more is sent, the safety cap counts from now.
   */
  start(key: string, send: () => Promise<unknown>): void {
    const existing = this.running.get(key);
    if (existing) {
      existing.cap.refresh();
      return;
    }
    const tick = () => {
      send().catch((err: unknown) => {
        this.logger.debug({ key, err: describeError(err) }, 'typing indicator failed');
      });
    };
    const interval = setInterval(tick, this.intervalMs);
    const cap = setTimeout(() => this.stop(key), this.maxDurationMs);
    interval.unref();
    cap.unref();
    this.running.set(key, { interval, cap });
    tick();
  }

  /** Stops typing under `key` (nothing happens when it is not typing). */
  stop(key: string): void {
    const entry = this.running.get(key);
    if (!entry) return;
    clearInterval(entry.interval);
    clearTimeout(entry.cap);
    this.running.delete(key);
  }

  /** True while typing is shown under `key`. */
  isActive(key: string): boolean {
    return this.running.has(key);
  }

  /** Stops every indicator (shutdown). */
  stopAll(): void {
    for (const key of [...this.running.keys()]) this.stop(key);
  }
}

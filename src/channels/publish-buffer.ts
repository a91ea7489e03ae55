/**
 * Holds received messages while the bus cannot take them (Redis briefly away) and
 * handles them in arrival order, retrying with backoff until Redis is back
 * (Discord's gateway events and Signal's event stream: platforms that do not
 * deliver again what the adapter took).
 * Bounded: when full, the oldest held message is dropped with a warning.
 * A failure marked permanent (an AppError with `transient: false`, e.g.
 * INVALID_MESSAGE) drops that message instead of blocking the ones behind it.
 */
import { AppError, describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';

export interface PublishBufferOptions<T> {
  /** Handles one item (access check, publish…); rejects while Redis is unavailable. */
  publish: (item: T) => Promise<void>;
  /** An id for log lines. */
  idOf: (item: T) => string;
  logger: Logger;
  /** Names the platform in log lines ("discord", "signal"). */
  label: string;
  /** Most messages held at once; beyond it the oldest is dropped. @defaultValue 1000 */
  capacity?: number;
  /** First retry delay. @defaultValue 200 */
  initialDelayMs?: number;
  /** Longest retry delay. @defaultValue 10000 */
  maxDelayMs?: number;
}

/** An ordered, bounded queue with retry. */
export class PublishBuffer<T> {
  private readonly queue: T[] = [];
  private readonly publish: (item: T) => Promise<void>;
  private readonly idOf: (item: T) => string;
  private readonly logger: Logger;
  private readonly label: string;
  private readonly capacity: number;
  private readonly initialDelayMs: number;
  private readonly maxDelayMs: number;
  private draining: Promise<void> | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private readonly idleWaiters: Array<() => void> = [];

  constructor(options: PublishBufferOptions<T>) {
    this.publish = options.publish;
    this.idOf = options.idOf;
    this.logger = options.logger;
    this.label = options.label;
    this.capacity = options.capacity ?? 1000;
    this.initialDelayMs = options.initialDelayMs ?? 200;
    this.maxDelayMs = options.maxDelayMs ?? 10_000;
    if (!Number.isInteger(this.capacity) || this.capacity < 1) throw new RangeError('capacity must be ≥ 1');
    if (this.initialDelayMs < 1 || this.maxDelayMs < this.initialDelayMs) {
      throw new RangeError('retry delays must be positive and maxDelayMs ≥ initialDelayMs');
    }
  }

  /** Messages waiting to be published. */
  get size(): number {
    return this.queue.length;
  }

  /** Queues an item; it is handled after every item queued before it. */
  push(message: T): void {
    if (this.closed) {
      this.logger.warn(
        { id: this.idOf(message) },
        `${this.label} message received while stopping; not published`,
      );
      return;
    }
    if (this.queue.length >= this.capacity) {
      const dropped = this.queue.shift();
      this.logger.warn(
        { id: dropped === undefined ? undefined : this.idOf(dropped), capacity: this.capacity },
        `${this.label} inbound buffer full: dropped the oldest held message`,
      );
    }
    this.queue.push(message);
    this.draining ??= this.drain().finally(() => {
      this.draining = undefined;
      for (const resolve of this.idleWaiters.splice(0)) resolve();
    });
  }

  /** Resolves when nothing is waiting to be published. */
  idle(): Promise<void> {
    if (!this.draining) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops retrying; messages still held are logged as lost (once). Idempotent: the same promise every time. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      this.wake?.();
      try {
        await this.draining;
      } finally {
        if (this.queue.length > 0) {
          this.logger.warn(
            { count: this.queue.length },
            `${this.label} stopped with messages not yet on the bus`,
          );
          this.queue.length = 0;
        }
      }
    })();
    return this.closing;
  }

  private async drain(): Promise<void> {
    let delay = this.initialDelayMs;
    let failing = false;
    while (this.queue.length > 0 && !this.closed) {
      const message = this.queue[0]!;
      try {
        await this.publish(message);
        if (this.queue[0] === message) this.queue.shift();
        if (failing)
          this.logger.info(
            { held: this.queue.length },
            `bus is back: publishing held ${this.label} messages`,
          );
        failing = false;
        delay = this.initialDelayMs;
      } catch (err) {
        if (err instanceof AppError && !err.transient) {
          if (this.queue[0] === message) this.queue.shift();
          this.logger.error(
            { err, id: this.idOf(message) },
            `${this.label} message failed permanently; dropped`,
          );
          continue;
        }
        if (!failing) {
          this.logger.warn(
            { held: this.queue.length, error: describeError(err) },
            `bus unavailable: holding ${this.label} messages and retrying`,
          );
        }
        failing = true;
        await this.sleep(delay);
        delay = Math.min(delay * 2, this.maxDelayMs);
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }
}

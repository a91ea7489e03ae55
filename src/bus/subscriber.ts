/**
 * One pub/sub connection per Bus, shared by every subscription (cancellation,
 * activity, CLI replies). ioredis re-subscribes by itself after a reconnect.
 */
import type { Redis } from 'ioredis';
import { runAll } from '../lifecycle/run-all.js';
import type { Logger } from '../log/index.js';

type Handler = (payload: string) => void;

export class Subscriber {
  private readonly handlers = new Map<string, Set<Handler>>();
  private closing: Promise<void> | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly logger: Logger,
  ) {
    redis.on('message', (channel: string, payload: string) => {
      for (const handler of this.handlers.get(channel) ?? []) {
        try {
          handler(payload);
        } catch (err) {
          this.logger.error({ err, channel }, 'pub/sub handler failed');
        }
      }
    });
  }

  /** Subscribes `handler` to `channel`; resolves once Redis confirmed. Returns the unsubscribe. */
  async subscribe(channel: string, handler: Handler): Promise<() => Promise<void>> {
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
      await this.redis.subscribe(channel);
    }
    set.add(handler);
    return async () => {
      const current = this.handlers.get(channel);
      if (!current?.delete(handler) || current.size > 0) return;
      this.handlers.delete(channel);
      if (this.redis.status === 'ready') await this.redis.unsubscribe(channel);
    };
  }

  /** Drops every handler and the connection. Idempotent: the same promise every time. */
  close(): Promise<void> {
    this.closing ??= runAll([() => this.handlers.clear(), () => this.redis.disconnect()]);
    return this.closing;
  }
}

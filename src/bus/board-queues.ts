/**
 * The queues Bull Board shows, built on the bus side so the dashboard never
 * imports BullMQ: one BullMQ `Queue` per queue found under the prefix, each
 * wrapped in Bull Board's adapter. The dashboard adds the adapters to its
 * board and closes this when it stops. Another agent's queues are shown
 * under its name (`work:inbound`), so every agent's queues fit on one board.
 */
import type { BaseAdapter } from '@bull-board/api/baseAdapter';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { discoverQueues } from './queue-stats.js';

export class BoardQueues {
  readonly #queues = new Map<string, Queue>();

  /** `redis` is borrowed (not closed here); `label` is put before each queue's name on the board. */
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly label?: string,
  ) {}

  /** The adapters of the queues found since the last call (all of them on the first). */
  async added(): Promise<BaseAdapter[]> {
    const adapters: BaseAdapter[] = [];
    // Loaded here, by the dashboard's first call: every bus has an ops reader, but only a dashboard shows the board.
    const { BullMQAdapter } = await import('@bull-board/api/bullMQAdapter');
    for (const name of await discoverQueues(this.redis, this.prefix)) {
      if (this.#queues.has(name)) continue;
      const queue = new Queue(name, { connection: this.redis, prefix: this.prefix });
      // The borrowed connection's errors are re-emitted here; unheard, BullMQ prints them (the board's reads report their own).
      queue.on('error', () => undefined);
      this.#queues.set(name, queue);
      adapters.push(new BullMQAdapter(queue, this.label ? { prefix: `${this.label}:` } : {}));
    }
    return adapters;
  }

  /** Closes every queue opened (errors ignored: the dashboard is stopping). */
  async close(): Promise<void> {
    await Promise.all([...this.#queues.values()].map((q) => q.close().catch(() => undefined)));
  }
}

/**
 * Durable CLI replies. A `magpie send` / `magpie chat` request gets a fresh
 * reply address; every message to it is appended (JSON) to the address's
 * reply list `<prefix>:cli-replies:<address>` (RPUSH + EXPIRE, so a list
 * outlives its last message by {@link REPLY_LIST_TTL_S}) and published on
 * `<prefix>:cli:<address>`, in one script call.
 *
 * The list is the source of truth; pub/sub is the fast path. A waiting client
 * hears the publish at once. When its subscriber connection drops (Redis
 * killed and restarted), what was published meanwhile is lost to pub/sub, so
 * after every (re)connect the watcher first re-subscribes, waits for Redis to
 * confirm, and only then reads the whole list of every address it watches:
 * a message pushed before that read is in the list, one pushed after it is
 * published to a live subscription. Nothing can fall between the two.
 *
 * The list is read, never popped: a destructive blocking read (BLPOP) loses
 * the message when Redis dies after taking it and before the answer reaches
 * the client. So a handler may see one message twice (published, then read
 * from the list): callers recognise messages by their id.
 */
import type { Redis } from 'ioredis';
import { describeError } from '../errors/index.js';
import { once, runAll } from '../lifecycle/run-all.js';
import type { Logger } from '../log/index.js';
import { keys } from './keys.js';
import { type LuaScript, runScript } from './lua.js';
import { onResubscribed } from './redis.js';

/** How long a reply list lives after its last message (seconds): well past any client's wait. */
export const REPLY_LIST_TTL_S = 600;

type Handler = (payload: string) => void;

/**
 * Appends `payload` to the address's reply list (renewing its expiry) and
 * publishes it, atomically. Resolves to the number of pub/sub receivers.
 */
export async function pushReply(
  redis: Redis,
  prefix: string,
  address: string,
  payload: string,
  ttlS = REPLY_LIST_TTL_S,
): Promise<number> {
  const receivers = await runScript(
    redis,
    PUSH_REPLY,
    keys.cliReplies(prefix, address),
    keys.cliReply(prefix, address),
    payload,
    ttlS,
  );
  return Number(receivers);
}

/**
 * KEYS: the reply list. ARGV: the pub/sub channel, the payload, the list's TTL (s). → receivers.
 * One EVALSHA where a MULTI cost MULTI and EXEC besides its three commands.
 */
const PUSH_REPLY: LuaScript = {
  name: 'pushCliReply',
  keys: 1,
  lua: `redis.call('RPUSH', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return redis.call('PUBLISH', ARGV[1], ARGV[2])`,
};

/** The messages in an address's reply list, oldest first (JSON strings). */
export function readReplies(redis: Redis, prefix: string, address: string): Promise<string[]> {
  return redis.lrange(keys.cliReplies(prefix, address), 0, -1);
}

/** Every message to a CLI reply address (see {@link ReplyWatcher.watch}). */
export interface ReplyWatcherOptions {
  /** A connection of its own, put in subscriber mode (it must wait for Redis: `maxRetriesPerRequest: null`). */
  subscriber: Redis;
  /** A connection of its own for reading the lists (patient like the subscriber). */
  reader: Redis;
  prefix: string;
  logger: Logger;
}

interface Watch {
  address: string;
  handlers: Set<Handler>;
}

/** Watches CLI reply addresses: pub/sub as messages are published, the lists again after each reconnect. */
export class ReplyWatcher {
  readonly #o: ReplyWatcherOptions;
  /** Watched addresses by their pub/sub channel. */
  readonly #watches = new Map<string, Watch>();
  #closed = false;
  readonly #close = once(() => {
    this.#closed = true;
    return runAll([
      () => this.#watches.clear(),
      () => this.#o.subscriber.disconnect(),
      () => this.#o.reader.disconnect(),
    ]);
  });

  constructor(options: ReplyWatcherOptions) {
    this.#o = options;
    options.subscriber.on('message', (channel: string, payload: string) => this.#deliver(channel, payload));
    // After every (re)connect, and on a Cluster every move of its pub/sub connection; the first finds nothing to catch up on.
    onResubscribed(options.subscriber, () => {
      void this.#catchUp();
    });
  }

  /**
   * Calls `handler` with each message (a JSON string) to `address`: as it is
   * published, and once more from the list after a reconnect. Resolves once
   * Redis confirmed the subscription; returns the unwatch.
   */
  async watch(address: string, handler: Handler): Promise<() => Promise<void>> {
    const channel = keys.cliReply(this.#o.prefix, address);
    let watch = this.#watches.get(channel);
    if (!watch) {
      watch = { address, handlers: new Set() };
      this.#watches.set(channel, watch);
    }
    watch.handlers.add(handler);
    await this.#o.subscriber.subscribe(channel);
    const watched = watch;
    return async () => {
      if (!watched.handlers.delete(handler) || watched.handlers.size > 0) return;
      this.#watches.delete(channel);
      if (this.#o.subscriber.status === 'ready') await this.#o.subscriber.unsubscribe(channel);
    };
  }

  /** The messages in an address's reply list, oldest first. */
  async read(address: string): Promise<string[]> {
    return this.#o.reader.lrange(keys.cliReplies(this.#o.prefix, address), 0, -1);
  }

  /** Drops every watch and both connections. Idempotent: the same promise every time. */
  close(): Promise<void> {
    return this.#close();
  }

  /** Re-subscribes every watched channel, then hands each list's messages to its handlers. */
  async #catchUp(): Promise<void> {
    const channels = [...this.#watches.keys()];
    if (channels.length === 0) return;
    try {
      // Confirmed subscriptions first: from here on, a publish reaches us; before it, the list has it.
      await this.#o.subscriber.subscribe(...channels);
      for (const channel of channels) {
        const watch = this.#watches.get(channel);
        if (!watch) continue;
        for (const payload of await this.read(watch.address)) this.#deliver(channel, payload);
      }
    } catch (err) {
      // Another drop mid-way: the next 'ready' catches up again. Closing: nobody waits any more.
      if (!this.#closed)
        this.#o.logger.warn({ err: describeError(err) }, 'reading CLI reply lists after a reconnect failed');
    }
  }

  #deliver(channel: string, payload: string): void {
    for (const handler of this.#watches.get(channel)?.handlers ?? []) {
      try {
        handler(payload);
      } catch (err) {
        this.#o.logger.error({ err: describeError(err), channel }, 'CLI reply handler failed');
      }
    }
  }
}

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
 * published to a live subscription. Nothing can fall between the two. A
 * catch-up that fails (the read refused mid-failover) is retried, with a
 * growing pause, until it succeeds or the watcher closes.
 *
 * The list is read, never popped: a destructive blocking read (BLPOP) loses
 * the message when Redis dies after taking it and before the answer reaches
 * the client. So a handler may see one message twice (published, then read
 * from the list): callers recognise messages by their id.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { describeError } from '../errors/index.js';
import { once, runAll } from '../lifecycle/run-all.js';
import type { Logger } from '../log/index.js';
import { keys } from './keys.js';
import { type LuaScript, runScript } from './lua.js';
import { onResubscribed } from './redis.js';

/** How long a reply list lives after its last message (seconds): well past any client's wait. */
export const REPLY_LIST_TTL_S = 600;

/** The pause before the first retry of a failed catch-up (ms); doubled up to {@link CATCH_UP_MAX_PAUSE_MS}. */
const CATCH_UP_FIRST_PAUSE_MS = 100;
const CATCH_UP_MAX_PAUSE_MS = 5_000;

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
  /** The catch-up running, if any; {@link #again} asks it for one more round. */
  #catchingUp: Promise<void> | undefined;
  #again = false;
  /** Ends a catch-up's pause between retries when the watcher closes. */
  readonly #closing = new AbortController();
  readonly #close = once(() => {
    this.#closed = true;
    this.#closing.abort();
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
    onResubscribed(options.subscriber, () => this.#requestCatchUp());
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

  /**
   * Catches up now, or once more after the catch-up running. A failed catch-up is
   * retried until it succeeds or the watcher closes: on a Cluster the subscriber can
   * stay ready while the read fails, so no later 'ready' would come to catch up again.
   */
  #requestCatchUp(): void {
    if (this.#catchingUp) {
      this.#again = true;
      return;
    }
    this.#catchingUp = this.#catchUpUntilDone().finally(() => {
      this.#catchingUp = undefined;
    });
  }

  async #catchUpUntilDone(): Promise<void> {
    let pause = CATCH_UP_FIRST_PAUSE_MS;
    let failures = 0;
    while (!this.#closed) {
      this.#again = false;
      try {
        await this.#catchUp();
        if (failures > 0)
          this.#o.logger.info({ failures }, 'CLI reply lists read after a reconnect, after retries');
        if (!this.#again) return;
        pause = CATCH_UP_FIRST_PAUSE_MS;
        failures = 0;
      } catch (err) {
        if (this.#closed) return;
        failures += 1;
        // The first failure and then every tenth: a long outage does not flood the log.
        if (failures % 10 === 1)
          this.#o.logger.warn(
            { err: describeError(err), failures, retryInMs: pause },
            'reading CLI reply lists after a reconnect failed; retrying',
          );
        await delay(pause, undefined, { signal: this.#closing.signal }).catch(() => undefined);
        pause = Math.min(pause * 2, CATCH_UP_MAX_PAUSE_MS);
      }
    }
  }

  /** Re-subscribes every watched channel, then hands each list's messages to its handlers. */
  async #catchUp(): Promise<void> {
    const channels = [...this.#watches.keys()];
    if (channels.length === 0) return;
    // Confirmed subscriptions first: from here on, a publish reaches us; before it, the list has it.
    await this.#o.subscriber.subscribe(...channels);
    for (const channel of channels) {
      const watch = this.#watches.get(channel);
      if (!watch) continue;
      for (const payload of await this.read(watch.address)) this.#deliver(channel, payload);
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

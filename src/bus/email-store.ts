/**
 * The e-mail channel's state in Redis (the `EmailStore` port of
 * channels/email/store.ts, implemented structurally): a hash per mailbox with
 * its UIDVALIDITY and the last UID taken, a JSON record per thread (expiring
 * after 30 days without mail), and a hash counting the mail ignored by reason.
 */
import type { Redis } from 'ioredis';
import { keys } from './keys.js';

/** A thread's record lives this long after its last accepted mail. */
const THREAD_TTL_SECONDS = 30 * 24 * 3600;

export class RedisEmailStore {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  async cursor(mailbox: string): Promise<{ uidValidity: string; lastUid: number } | undefined> {
    const [uidValidity, lastUid] = await this.#redis.hmget(
      keys.emailCursor(this.#prefix, mailbox),
      'uidValidity',
      'lastUid',
    );
    if (!uidValidity || !lastUid) return undefined;
    return { uidValidity, lastUid: Number(lastUid) };
  }

  async saveCursor(mailbox: string, cursor: { uidValidity: string; lastUid: number }): Promise<void> {
    await this.#redis.hset(keys.emailCursor(this.#prefix, mailbox), {
      uidValidity: cursor.uidValidity,
      lastUid: String(cursor.lastUid),
    });
  }

  async thread(key: string): Promise<{ subject: string; references: string[] } | undefined> {
    const text = await this.#redis.get(keys.emailThread(this.#prefix, key));
    if (!text) return undefined;
    const value = JSON.parse(text) as { subject?: unknown; references?: unknown };
    if (typeof value.subject !== 'string' || !Array.isArray(value.references)) return undefined;
    return { subject: value.subject, references: value.references.filter((r) => typeof r === 'string') };
  }

  async saveThread(key: string, thread: { subject: string; references: string[] }): Promise<void> {
    await this.#redis.set(
      keys.emailThread(this.#prefix, key),
      JSON.stringify(thread),
      'EX',
      THREAD_TTL_SECONDS,
    );
  }

  async countIgnored(reason: string): Promise<void> {
    await this.#redis.hincrby(keys.emailIgnored(this.#prefix), reason, 1);
  }

  async ignored(): Promise<Record<string, number>> {
    const all = await this.#redis.hgetall(keys.emailIgnored(this.#prefix));
    return Object.fromEntries(Object.entries(all).map(([k, v]) => [k, Number(v)]));
  }
}

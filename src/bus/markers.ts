/**
 * Short-lived markers and locks on Redis, so a redone job does not repeat
 * what it already did ("this helper's result was published", "this
 * occurrence was queued") and one heartbeat runs at a time. Key names come
 * from keys.ts and helpers-queue.ts; every marker expires on its own.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { type LuaScript, runScript } from './lua.js';

const RELEASE_SCRIPT: LuaScript = {
  name: 'markerRelease',
  keys: 1,
  lua: `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`,
};
const RENEW_SCRIPT: LuaScript = {
  name: 'markerRenew',
  keys: 1,
  lua: `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`,
};

/** A lock this process holds; only its holder can renew or release it. */
export interface HeldLock {
  /** Extends the lock by its lifetime again (nothing when it was lost). */
  renew(): Promise<void>;
  /** Lets go of the lock (nothing when it was lost). */
  release(): Promise<void>;
}

/** Markers and locks on a shared connection. */
export class Markers {
  constructor(private readonly redis: Redis) {}

  /** True while the marker is set. */
  async isSet(key: string): Promise<boolean> {
    return (await this.redis.exists(key)) === 1;
  }

  /** Sets the marker for `ttlSeconds`. */
  async set(key: string, ttlSeconds: number): Promise<void> {
    await this.redis.set(key, '1', 'EX', ttlSeconds);
  }

  /** Sets the marker for `ttlSeconds` unless it is set; true when this call set it. */
  async claim(key: string, ttlSeconds: number): Promise<boolean> {
    return (await this.redis.set(key, '1', 'EX', ttlSeconds, 'NX')) === 'OK';
  }

  /** Removes the marker. */
  async clear(key: string): Promise<void> {
    await this.redis.del(key);
  }

  /** Takes the lock `key` for `ttlMs` unless someone holds it; undefined when taken. */
  async lock(key: string, ttlMs: number): Promise<HeldLock | undefined> {
    const token = randomUUID();
    if ((await this.redis.set(key, token, 'PX', ttlMs, 'NX')) !== 'OK') return undefined;
    return {
      renew: async () => {
        await runScript(this.redis, RENEW_SCRIPT, key, token, String(ttlMs));
      },
      release: async () => {
        await runScript(this.redis, RELEASE_SCRIPT, key, token);
      },
    };
  }
}

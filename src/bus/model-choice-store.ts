/**
 * The chats' model choices (`/model`) in Redis: one hash, `<prefix>:chat-models`
 * (session key → model id), without expiry, so every worker sees a chat's
 * choice and it survives restarts.
 */
import type { Redis } from 'ioredis';
import { modelKeys } from './keys.js';

/** The hash of model choices under a prefix. */
export function modelChoicesKey(prefix: string): string {
  return modelKeys.choices(prefix);
}

/** Implements the agent's `ModelChoiceStore` port (agent/ports.ts) structurally. */
export class RedisModelChoiceStore {
  readonly #redis: Redis;
  readonly #key: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#key = modelChoicesKey(prefix);
  }

  async get(sessionKey: string): Promise<string | undefined> {
    return (await this.#redis.hget(this.#key, sessionKey)) ?? undefined;
  }

  async set(sessionKey: string, model: string | undefined): Promise<void> {
    if (model === undefined) await this.#redis.hdel(this.#key, sessionKey);
    else await this.#redis.hset(this.#key, sessionKey, model);
  }
}

/** The Redis StateStore: the last user-facing chat, shared by every worker. */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { safeJson } from './json-topic.js';
import { keys } from './keys.js';

const LastChannelSchema = z.object({
  channel: z.string().min(1),
  chatId: z.string().min(1),
  threadId: z.string().min(1).optional(),
});

/** Implements the agent's `StateStore` port (agent/ports.ts) structurally. */
export class RedisStateStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async setLastChannel(channel: string, chatId: string, threadId?: string): Promise<void> {
    const value = threadId ? { channel, chatId, threadId } : { channel, chatId };
    await this.redis.set(keys.lastChannel(this.prefix), JSON.stringify(value));
  }

  async getLastChannel(): Promise<{ channel: string; chatId: string; threadId?: string } | undefined> {
    const raw = await this.redis.get(keys.lastChannel(this.prefix));
    if (raw === null) return undefined;
    const parsed = LastChannelSchema.safeParse(safeJson(raw));
    return parsed.success ? parsed.data : undefined;
  }
}

/**
 * Live records in Redis: what a channel showed of a turn's live reply
 * (`LiveRecord`, messages/live-update.ts), one JSON value per channel and
 * turn, expiring after a day — long after any redo of the turn.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { LiveRecord } from '../messages/live-update.js';
import { safeJson } from './json-topic.js';
import { keys } from './keys.js';

/** How long a record is kept (seconds). */
export const LIVE_RECORD_TTL_S = 24 * 60 * 60;

const LiveRecordSchema = z.object({
  messageIds: z.array(z.string()).max(1000),
  done: z.boolean().optional(),
  finalHash: z.string().optional(),
});

/** The `LiveRecords` port of channels/live/surface.ts on the bus's Redis (implemented structurally). */
export class RedisLiveRecords {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async get(channel: string, turn: string): Promise<LiveRecord | undefined> {
    const raw = await this.redis.get(keys.liveRecord(this.prefix, channel, turn));
    if (raw === null) return undefined;
    const parsed = LiveRecordSchema.safeParse(safeJson(raw));
    if (!parsed.success) return undefined;
    const { messageIds, done, finalHash } = parsed.data;
    return { messageIds, ...(done ? { done } : {}), ...(finalHash ? { finalHash } : {}) };
  }

  async put(channel: string, turn: string, record: LiveRecord): Promise<void> {
    await this.redis.set(
      keys.liveRecord(this.prefix, channel, turn),
      JSON.stringify(record),
      'EX',
      LIVE_RECORD_TTL_S,
    );
  }
}

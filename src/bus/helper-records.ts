/**
 * Running helpers in Redis: a hash `<prefix>:helpers` of id → HelperRecord
 * JSON, written when a helper starts and removed when it ends, so
 * `magpie status` can list them from any process.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { HelperRecord } from '../messages/helper-job.js';
import { helperKeys } from './keys.js';

const RecordSchema = z.object({
  id: z.string(),
  label: z.string().optional(),
  kind: z.enum(['spawn', 'subagent']),
  origin: z.object({
    channel: z.string(),
    chatId: z.string(),
    threadId: z.string().optional(),
    sessionKey: z.string(),
  }),
  task: z.string(),
  startedAt: z.string(),
  pid: z.number(),
});

/** The running-helpers hash: written by the worker running each helper, listed by `magpie status`. */
/** Implements the `HelperTracker` port of helpers/types.ts structurally. */
export class RedisHelperTracker {
  readonly key: string;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.key = helperKeys.running(prefix);
  }

  async started(record: HelperRecord): Promise<void> {
    await this.redis.hset(this.key, record.id, JSON.stringify(record));
  }

  async finished(id: string): Promise<void> {
    await this.redis.hdel(this.key, id);
  }

  /** The running helpers (malformed entries skipped), oldest first. */
  async list(): Promise<HelperRecord[]> {
    const all = await this.redis.hgetall(this.key);
    const records: HelperRecord[] = [];
    for (const raw of Object.values(all)) {
      try {
        const parsed = RecordSchema.safeParse(JSON.parse(raw));
        if (parsed.success) records.push(parsed.data as HelperRecord);
      } catch (_err) {
        // Not JSON: another writer's garbage; the status view shows what it can.
      }
    }
    return records.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
  }
}

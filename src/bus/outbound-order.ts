/**
 * Each chat's replies in the order they were queued, whichever gateway sends
 * them and whatever happened to the one before.
 *
 * A chat's lane (`<prefix>:outbound-lane:<channel>:<chat>`, a list) holds the
 * ids of its outbound messages not yet finished, oldest first: publish
 * appends the id before it adds the job (once: a redone turn's second publish
 * finds it there). A delivery sends a message only when it is its lane's head
 * (or in no lane: queued before lanes, or its lane expired). Otherwise it
 * looks at the head's job: one that is finished, failed for good or gone is
 * dropped from the lane (a sender died before it could leave); one still to
 * be sent (active on a gateway alive or dead, waiting, or delayed for a retry)
 * holds the later message back. A held job is marked in the chat's held set
 * and moved to BullMQ's delayed set, so it holds no delivery slot and other
 * chats go on; whoever finishes the head (sent, or failed for good) leaves
 * the lane and promotes the next message if it was held. The delay is only
 * the safety net for a head whose sender died: the held job is taken again
 * after it and looks once more.
 *
 * Hold and leave are scripts, so they cannot interleave: a head that left
 * before the hold makes the hold say "send now"; one that leaves between the
 * hold and the postponement unmarks the job, whose `settle` then promotes it.
 * Marking before postponing keeps promotions of a job whose processor has not
 * returned rare: BullMQ's lock renewal is tracked by job id, and a run that
 * ends after the same job was taken again stops the renewal of the new run.
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { type LuaScript, runScript } from './lua.js';

/** How long a lane and its held set outlive their last change (s): as long as failed outbound jobs are kept. */
export const LANE_TTL_S = 7 * 24 * 3_600;

/** Job states in which a message is still to be sent (BullMQ's `getJobState`). */
const UNFINISHED = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

/** KEYS: lane. ARGV: id, ttl. Appends `id` unless the lane has it. */
const ENTER: LuaScript = {
  name: 'lane_enter',
  keys: 1,
  lua: `
if not redis.call('LPOS', KEYS[1], ARGV[1]) then redis.call('RPUSH', KEYS[1], ARGV[1]) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
`,
};

/** KEYS: lane. ARGV: id. The head when `id` is in the lane behind it; nil when `id` may go. */
const BLOCKER: LuaScript = {
  name: 'lane_blocker',
  keys: 1,
  lua: `
local head = redis.call('LINDEX', KEYS[1], 0)
if not head or head == ARGV[1] then return false end
if not redis.call('LPOS', KEYS[1], ARGV[1]) then return false end
return head
`,
};

/** KEYS: lane, held. ARGV: head. Drops a finished head, if it still is the head. */
const DROP_HEAD: LuaScript = {
  name: 'lane_drop_head',
  keys: 2,
  lua: `
if redis.call('LINDEX', KEYS[1], 0) == ARGV[1] then
  redis.call('LPOP', KEYS[1])
  redis.call('SREM', KEYS[2], ARGV[1])
end
return 1
`,
};

/**
 * KEYS: lane, held. ARGV: id, ttl. Marks `id` held and returns 1, or returns 0
 * when it need not wait any more (the head left meanwhile, or its lane is gone).
 */
const HOLD: LuaScript = {
  name: 'lane_hold',
  keys: 2,
  lua: `
local head = redis.call('LINDEX', KEYS[1], 0)
if not head or head == ARGV[1] or not redis.call('LPOS', KEYS[1], ARGV[1]) then return 0 end
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return 1
`,
};

/** KEYS: lane, held. ARGV: id. Leaves the lane; returns the new head when it was held (to promote), else nil. */
const LEAVE: LuaScript = {
  name: 'lane_leave',
  keys: 2,
  lua: `
redis.call('LREM', KEYS[1], 1, ARGV[1])
redis.call('SREM', KEYS[2], ARGV[1])
local head = redis.call('LINDEX', KEYS[1], 0)
if head and redis.call('SREM', KEYS[2], head) == 1 then return head end
return false
`,
};

/** The order of one channel's outbound messages, chat by chat (see the file's header). */
export interface ChatOrder {
  /**
   * Whether message `id` of `chatId` may be sent now: true when every message
   * queued before it in the chat has finished (sent, failed for good, gone).
   */
  isNext(chatId: string, id: string): Promise<boolean>;
  /**
   * Marks message `id` held behind the head of its chat's lane, so that the
   * head promotes it when it finishes; false when the head finished meanwhile
   * (send it now). The caller then postpones the job and calls {@link settle}.
   */
  hold(chatId: string, id: string): Promise<boolean>;
  /**
   * After a held job was postponed: when the head finished between the hold
   * and the postponement (its promotion found the job still running), promotes
   * the job now.
   */
  settle(chatId: string, id: string): Promise<void>;
  /** Message `id` is finished (sent, or failed for good): leaves the lane and promotes the next if it was held. */
  done(chatId: string, id: string): Promise<void>;
}

/** The lane keys of a chat. */
export function laneKeys(prefix: string, channel: string, chatId: string): { lane: string; held: string } {
  return {
    lane: `${prefix}:outbound-lane:${channel}:${chatId}`,
    held: `${prefix}:outbound-held:${channel}:${chatId}`,
  };
}

/** Publish side: puts `id` at the end of its chat's lane (before its job is added). Idempotent. */
export async function enterLane(
  redis: Redis,
  prefix: string,
  message: { channel: string; chatId: string; id: string },
): Promise<void> {
  const { lane } = laneKeys(prefix, message.channel, message.chatId);
  await runScript(redis, ENTER, lane, message.id, LANE_TTL_S);
}

/** Delivery side: the lanes of `queue`'s channel (the `outbound-<channel>` queue). */
export class OutboundLanes implements ChatOrder {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly channel: string,
    private readonly queue: Queue,
  ) {}

  async isNext(chatId: string, id: string): Promise<boolean> {
    const { lane, held } = laneKeys(this.prefix, this.channel, chatId);
    for (;;) {
      const head = (await runScript(this.redis, BLOCKER, lane, id)) as string | null;
      if (head === null) return true;
      if (UNFINISHED.has(await this.queue.getJobState(head))) return false;
      await runScript(this.redis, DROP_HEAD, lane, held, head);
    }
  }

  async hold(chatId: string, id: string): Promise<boolean> {
    const { lane, held } = laneKeys(this.prefix, this.channel, chatId);
    return (await runScript(this.redis, HOLD, lane, held, id, LANE_TTL_S)) === 1;
  }

  async settle(chatId: string, id: string): Promise<void> {
    const { held } = laneKeys(this.prefix, this.channel, chatId);
    if ((await this.redis.sismember(held, id)) === 0) await this.promote(id);
  }

  async done(chatId: string, id: string): Promise<void> {
    const { lane, held } = laneKeys(this.prefix, this.channel, chatId);
    const next = (await runScript(this.redis, LEAVE, lane, held, id)) as string | null;
    if (next !== null) await this.promote(next);
  }

  /** Moves a delayed job to waiting; one that is no longer delayed (taken again meanwhile) is left alone. */
  private async promote(id: string): Promise<void> {
    const job = await this.queue.getJob(id);
    if (!job) return;
    await job.promote().catch(async (err: unknown) => {
      if ((await job.getState()) !== 'delayed') return;
      throw err;
    });
  }
}

/**
 * Which attempt of a session's turn may answer it. BullMQ's lock keeps one
 * worker on a turn job, but a lock lost (Redis away longer than the lock, an
 * event loop stalled past a renewal) lets another worker take the job while
 * the first still runs. Both would name their reply after the same first
 * message; the first one queued wins the id, and a message only the other
 * attempt read would get no answer.
 *
 * So each attempt writes its own id under `<prefix>:attempt:<session>` when it
 * starts, before it reads the session, and answers (publishes, then trims the
 * mailbox) only while its id is still there. An attempt that finds a later
 * one's id leaves everything to it. The later attempt read the session after
 * it claimed, so when the earlier one's check passed first, the later one sees
 * the earlier one's stored answer and sends it again under its id (a no-op)
 * instead of answering those messages anew.
 *
 * A check passing is not enough on its own: between it and the write it
 * allows (a session append, the reply's queueing) a later attempt could
 * claim, read the session without that write, and then answer the same
 * messages again, so one message would be stored twice. So a check that
 * passes also takes the turn's write lease (`<prefix>:attempt-writing:<session>`,
 * this attempt's id, {@link WRITE_LEASE_MS}), the write runs, and the lease is given back;
 * a claim made while another attempt holds the lease waits until it is given
 * back or expires. A write is a file append or a few queued messages
 * (milliseconds); a process killed inside one delays the next attempt's claim
 * by the lease's rest at most. What remains is an attempt whose event loop
 * stalls inside a write for longer than the lease.
 *
 * A claim can also vanish without a later attempt taking it: a failover to a
 * replica that had not copied it yet, a Redis restarted without its data. The
 * check then takes the claim again, in the same script, unless another attempt
 * did so first or holds the write lease; so the attempt goes on answering
 * instead of stopping and leaving its messages to the stranded-mailbox sweep
 * (tens of seconds later). Two attempts that both lost their claim cannot both
 * take it back: the first check to run sets it, and the other's then finds
 * that attempt's id.
 */
import { setTimeout } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { keys } from './keys.js';
import { type LuaScript, runScript } from './lua.js';

/** How long a claim outlives its turn: far longer than any turn, short enough to leave no litter. */
const CLAIM_TTL_SECONDS = 24 * 60 * 60;

/** The longest a write keeps later claims waiting: a write takes milliseconds, this covers a busy event loop. */
export const WRITE_LEASE_MS = 5_000;

/** How often a claim kept waiting by another attempt's write looks again (that is rare: overlapping attempts). */
const CLAIM_RETRY_MS = 25;

/**
 * Claims the turn for `ARGV[1]` unless another attempt holds the write lease:
 * 0 when claimed, else the lease's milliseconds left.
 */
const CLAIM_SCRIPT: LuaScript = {
  name: 'turnFenceClaim',
  keys: 2,
  lua: `local writer = redis.call('GET', KEYS[2])
if writer and writer ~= ARGV[1] then
  local left = redis.call('PTTL', KEYS[2])
  if left < 1 then return 1 end
  return left
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 0`,
};

/**
 * Checks the claim of `ARGV[1]` and, when it may write, takes the write lease:
 * 1 it holds the claim; 2 nobody did (nor holds the lease), and it holds it
 * now; 0 another attempt does.
 */
const ENTER_SCRIPT: LuaScript = {
  name: 'turnFenceEnter',
  keys: 2,
  lua: `local v = redis.call('GET', KEYS[1])
local found = 1
if v ~= ARGV[1] then
  if v then return 0 end
  local writer = redis.call('GET', KEYS[2])
  if writer and writer ~= ARGV[1] then return 0 end
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  found = 2
end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[3])
return found`,
};

/** Gives the write lease back if `ARGV[1]` still holds it: 1, else 0 (it expired during the write). */
const LEAVE_SCRIPT: LuaScript = {
  name: 'turnFenceLeave',
  keys: 1,
  lua: `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0`,
};

export interface TurnFenceOptions {
  /** @defaultValue {@link WRITE_LEASE_MS} */
  writeLeaseMs?: number;
  /** Told of a write that outlasted its lease: a later attempt may have claimed and read meanwhile. */
  onLeaseOutlived?: (sessionKey: string, attempt: string) => void;
}

/** What a check of the claim found. */
export type Hold = 'held' | 'retaken' | 'taken';

export class TurnFence {
  private readonly writeLeaseMs: number;
  private readonly onLeaseOutlived: ((sessionKey: string, attempt: string) => void) | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    options: TurnFenceOptions = {},
  ) {
    this.writeLeaseMs = options.writeLeaseMs ?? WRITE_LEASE_MS;
    this.onLeaseOutlived = options.onLeaseOutlived;
  }

  /**
   * Makes `attempt` the one that may answer `sessionKey`'s turn (a later claim takes it over),
   * once no other attempt is inside a write; `onWait` hears of each wait for one.
   */
  async claim(sessionKey: string, attempt: string, onWait?: (leaseLeftMs: number) => void): Promise<void> {
    const claimKey = keys.turnAttempt(this.prefix, sessionKey);
    const lease = keys.turnWriting(this.prefix, sessionKey);
    for (;;) {
      const left = Number(
        await runScript(this.redis, CLAIM_SCRIPT, claimKey, lease, attempt, CLAIM_TTL_SECONDS),
      );
      if (left <= 0) return;
      onWait?.(left);
      await setTimeout(Math.min(left, CLAIM_RETRY_MS));
    }
  }

  /**
   * Runs `write` if `attempt` still holds the turn (taking the claim again when it is gone, see
   * above), with no later claim made until it ends; 'taken', without running it, when another
   * attempt holds the turn.
   */
  async holding(sessionKey: string, attempt: string, write: () => Promise<void>): Promise<Hold> {
    const claimKey = keys.turnAttempt(this.prefix, sessionKey);
    const lease = keys.turnWriting(this.prefix, sessionKey);
    const found = await runScript(
      this.redis,
      ENTER_SCRIPT,
      claimKey,
      lease,
      attempt,
      CLAIM_TTL_SECONDS,
      this.writeLeaseMs,
    );
    if (found !== 1 && found !== 2) return 'taken';
    try {
      await write();
    } finally {
      const kept = await runScript(this.redis, LEAVE_SCRIPT, lease, attempt);
      if (kept !== 1) this.onLeaseOutlived?.(sessionKey, attempt);
    }
    return found === 1 ? 'held' : 'retaken';
  }
}

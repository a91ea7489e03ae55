/**
 * Queue names, Redis keys and job options of the bus, in one place.
 * BullMQ refuses `:` in queue names and custom job ids, so ids derived from
 * session keys are hashed.
 */
import type { JobsOptions } from 'bullmq';
import { shortHash } from '../messages/short-hash.js';

/** The queue of turn jobs (one pending turn per session). */
export const INBOUND_QUEUE = 'inbound';
/** Delayed jobs that time out approval questions (approvals.ts). */
export const APPROVAL_TIMEOUT_QUEUE = 'approval-timeouts';

/** The queue a channel consumes: `outbound-<channel>`. */
export function outboundQueueName(channel: string): string {
  return `outbound-${channel}`;
}

/** The deduplication id of a session's turn job (no `:`). */
export function turnDedupId(sessionKey: string): string {
  return `turn-${shortHash(sessionKey)}`;
}

/** Tunables of turn jobs, with their defaults. */
export interface TurnJobTuning {
  /** Tries of a turn whose failure is transient. @defaultValue 3 */
  attempts?: number;
  /** First retry delay, doubled each time. @defaultValue 2000 */
  backoffMs?: number;
}

/** Job options of a turn job for `sessionKey`. */
export function turnJobOptions(sessionKey: string, tuning: TurnJobTuning = {}): JobsOptions {
  return {
    deduplication: { id: turnDedupId(sessionKey), keepLastIfActive: true },
    attempts: tuning.attempts ?? 3,
    backoff: { type: 'exponential', delay: tuning.backoffMs ?? 2_000 },
    // A turn job is only a wake-up (its messages are in the mailbox, its reply id is the message's):
    // nothing reads a completed one, and keeping them cost a ZADD, an HSET and two trims per turn.
    removeOnComplete: true,
    removeOnFail: { age: 7 * 24 * 3_600 },
  };
}

/**
 * Job options of an outbound message. Completed jobs are kept for a day so a
 * redone turn's reply (same id) is ignored rather than sent twice.
 */
export function outboundJobOptions(id: string): JobsOptions {
  return {
    jobId: id,
    attempts: 8,
    backoff: { type: 'exponential', delay: 1_000 },
    removeOnComplete: { age: 24 * 3_600 },
    removeOnFail: { age: 7 * 24 * 3_600 },
  };
}

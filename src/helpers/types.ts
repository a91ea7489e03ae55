/**
 * Helper agents: what a spawned helper's job carries, where it reports, and
 * the small ports the spawn tool and the status view depend on.
 */
import { z } from 'zod';

/** The chat a helper reports to (`metadata.origin` of its result message). */
export const HelperOriginSchema = z.object({
  channel: z.string().min(1),
  chatId: z.string().min(1),
  threadId: z.string().min(1).optional(),
  /** The origin session: the result is queued in its mailbox, behind that chat's turns. */
  sessionKey: z.string().min(1),
});
export type HelperOrigin = z.infer<typeof HelperOriginSchema>;

/** The payload of a helper job on the `helpers` queue. */
export const HelperJobSchema = z.object({
  /** Also the BullMQ job id and part of the result message id. */
  id: z.string().regex(/^[a-z0-9-]+$/),
  task: z.string().min(1),
  label: z.string().min(1).optional(),
  origin: HelperOriginSchema,
  /** Delegation depth the helper runs at (1 for a helper spawned by a user's turn). */
  depth: z.number().int().min(1),
  createdAt: z.string(),
});
export type HelperJob = z.infer<typeof HelperJobSchema>;

/** Where the spawn tool puts helper jobs (the Redis queue in the daemon). */
export interface HelperQueue {
  enqueue(job: HelperJob): Promise<void>;
}

/** A running helper as `magpie status` shows it (one field of the `<prefix>:helpers` hash, JSON). */
export interface HelperRecord {
  id: string;
  label?: string;
  kind: 'spawn' | 'subagent';
  origin: { channel: string; chatId: string; threadId?: string; sessionKey: string };
  /** The task's first 200 characters. */
  task: string;
  startedAt: string;
  /** Process id of the worker running it. */
  pid: number;
}

/** Records running helpers (Redis in the daemon, the log only for `magpie agent`). */
export interface HelperTracker {
  started(record: HelperRecord): Promise<void>;
  finished(id: string): Promise<void>;
}

/** Delegation depth limit: a user's turn is depth 0; helpers of helpers stop here. */
export const DEFAULT_MAX_DEPTH = 2;
/** LLM calls a helper may make. */
export const HELPER_MAX_ITERATIONS = 10;

/**
 * Helper agents: the tracker port of running helpers and the limits. What a
 * helper's job carries and its record are in src/messages/helper-job.ts; the
 * spawn tool's queue port is in tools/spawn.ts.
 */
import type { HelperRecord } from '../messages/helper-job.js';

/** Records running helpers (Redis in the daemon, the log only for `magpie agent`). */
export interface HelperTracker {
  started(record: HelperRecord): Promise<void>;
  finished(id: string): Promise<void>;
}

/** Delegation depth limit: a user's turn is depth 0; helpers of helpers stop here. */
export const DEFAULT_MAX_DEPTH = 2;
/** LLM calls a helper may make. */
export const HELPER_MAX_ITERATIONS = 10;

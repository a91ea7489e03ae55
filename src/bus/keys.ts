/**
 * Redis keys spelled in one place (queues have theirs in queues.ts and
 * helpers-queue.ts): the operations view (the capped stream of per-turn
 * figures, the hash of turns running now, worker heartbeats, token use),
 * pairing, and the scheduler's markers and lock.
 */

/** Keys under a prefix. */
export const opsKeys = {
  /** Stream of finished turns (XADD MAXLEN ~ 1000), field `turn` = TurnRecord JSON. */
  turns: (prefix: string) => `${prefix}:turns`,
  /** Hash of running totals since the first turn (counters for /metrics): see {@link totalsFields}. */
  totals: (prefix: string) => `${prefix}:turn-totals`,
  /** One key per live worker process, with a TTL: WorkerBeat JSON. */
  worker: (prefix: string, id: string) => `${prefix}:workers:${id}`,
  /** Hash of one day's token use (`<session>|<kind>` and `*|<kind>` fields), expiring: see usage-records.ts. */
  usageDay: (prefix: string, date: string) => `${prefix}:usage:day:${date}`,
  /** Hash of each session's token use since its first turn (`<session>|<kind>` fields). */
  usageSessions: (prefix: string) => `${prefix}:usage:sessions`,
  /** The pattern matching every worker heartbeat key. */
  workerPattern: (prefix: string) => `${prefix}:workers:*`,
};

/** Finished turns kept in the stream (approximately). */
export const TURNS_STREAM_MAXLEN = 1000;

/** Upper bounds (seconds) of the turn latency histogram's buckets. */
export const LATENCY_BUCKETS_S = [0.5, 1, 2, 5, 10, 30, 60, 120, 300] as const;

/** Field names of the totals hash. */
export const totalsFields = {
  outcome: (outcome: string) => `outcome:${outcome}`,
  promptTokens: 'tokens:prompt',
  cachedTokens: 'tokens:cached',
  cacheWriteTokens: 'tokens:cache_write',
  completionTokens: 'tokens:completion',
  toolCalls: 'tools:calls',
  toolFailures: 'tools:failed',
  llmCalls: 'llm:calls',
  /** LLM calls answered by a fallback model. */
  fallbacks: 'llm:fallbacks',
  /** LLM calls answered by one model (its configured id). */
  modelCalls: (model: string) => `llm:model:${model}`,
  latencyCount: 'latency:count',
  latencySumMs: 'latency:sum_ms',
  latencyBucket: (le: number) => `latency:le:${le}`,
};

/** Pairing keys under a prefix (see pairing-store.ts). */
export function pairingKeys(prefix: string) {
  const codePrefix = `${prefix}:pairing:code:`;
  return {
    /** The PairingRequest JSON of a code, expiring after the code's TTL. */
    code: (code: string) => `${codePrefix}${code}`,
    /** What every code key starts with (the request script checks a pending code's key). */
    codePrefix,
    /** A sender's pending code. */
    pending: (channel: string, senderId: string) => `${prefix}:pairing:pending:${channel}:${senderId}`,
    /** Set while a sender was told their code recently. */
    notified: (channel: string, senderId: string) => `${prefix}:pairing:notified:${channel}:${senderId}`,
    /** Sorted set of pending codes by expiry time. */
    codes: `${prefix}:pairing:codes`,
    /** Set of approved sender ids of a channel. */
    approved: (channel: string) => `${prefix}:pairing:approved:${channel}`,
  };
}

/** Keys of the scheduler under a prefix. */
export const schedulerKeys = {
  /** Set once a scheduled job's message was published, so a redone job does not publish it twice. */
  fired: (prefix: string, jobId: string) => `${prefix}:scheduler:fired:${jobId}`,
  /** The heartbeat's lock: one worker runs a heartbeat at a time. */
  heartbeatLock: (prefix: string) => `${prefix}:scheduler:heartbeat-lock`,
};

/**
 * Redis keys of the operations view: the capped stream of per-turn figures,
 * the hash of turns running now and the worker heartbeat keys.
 */

/** Keys under a prefix. */
export const opsKeys = {
  /** Stream of finished turns (XADD MAXLEN ~ 1000), field `turn` = TurnRecord JSON. */
  turns: (prefix: string) => `${prefix}:turns`,
  /** Hash of running turns: turn id → RunningTurn JSON. */
  running: (prefix: string) => `${prefix}:running`,
  /** One key per live worker process, with a TTL: WorkerBeat JSON. */
  worker: (prefix: string, id: string) => `${prefix}:workers:${id}`,
  /** The pattern matching every worker heartbeat key. */
  workerPattern: (prefix: string) => `${prefix}:workers:*`,
};

/** Finished turns kept in the stream (approximately). */
export const TURNS_STREAM_MAXLEN = 1000;

/**
 * The worker side of the operations view: marks a turn running (with its LLM
 * iteration) and, when it ends, moves its figures to the capped turns stream
 * and adds them to the running totals and to the day's and the session's
 * token use, in one script call. Recording never fails a turn: a Redis error
 * is logged and dropped.
 */
import type { Redis } from 'ioredis';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import type { TurnMetrics } from '../messages/turn-metrics.js';
import { keys, LATENCY_BUCKETS_S, opsKeys, TURNS_STREAM_MAXLEN, totalsFields } from './keys.js';
import { HASH_ADD, type LuaScript, runScript } from './lua.js';
import { RedisRunningTurns } from './running-turns.js';
import type { TurnRecord, TurnTimeline } from './turn-records.js';
import { dayOf, USAGE_DAYS_KEPT, usageOf } from './usage-records.js';

/**
 * KEYS: running marker, turns stream, totals, the day's usage, per-session usage. ARGV: stream
 * length, the record (JSON), the day's TTL, the increments (JSON: totals, day and sessions, each
 * a list of [field, by]), this worker's id. One call: the marker goes, the record is appended, the
 * figures added. The marker goes only when this worker wrote it: an attempt taken over by a later
 * one on another worker (turn-fence.ts) leaves that one's marker, which /stop and status read.
 */
const FINISHED: LuaScript = {
  name: 'turnFinished',
  keys: 5,
  lua: `${HASH_ADD}
local running = redis.call('GET', KEYS[1])
if running then
  local ok, entry = pcall(cjson.decode, running)
  if not ok or type(entry) ~= 'table' or entry.worker == ARGV[5] then redis.call('DEL', KEYS[1]) end
end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '*', 'turn', ARGV[2])
local adds = cjson.decode(ARGV[4])
local function add(key, pairs)
  local fields, bys = {}, {}
  for i, pair in ipairs(pairs) do
    fields[i] = pair[1]
    bys[i] = pair[2]
  end
  hashAdd(key, fields, bys)
end
add(KEYS[3], adds.totals)
add(KEYS[4], adds.day)
add(KEYS[5], adds.sessions)
redis.call('EXPIRE', KEYS[4], ARGV[3])
return 1`,
};

export interface TurnRecorderOptions {
  redis: Redis;
  prefix: string;
  /** The id of the worker process (as in its heartbeat key). */
  worker: string;
  logger: Logger;
  /** Finished turns kept (approximately). @defaultValue 1000 */
  maxLen?: number;
  /** IANA time zone whose calendar days the token use is counted in. @defaultValue the system's time zone */
  timezone?: string;
  /** The clock (which day a turn counts for). @defaultValue `() => new Date()` */
  now?: () => Date;
}

/** How a turn ended, as the worker saw it. */
export type TurnEnd = ({ metrics: TurnMetrics } | { error: string; wallMs: number; session: string }) & {
  /** When its steps happened, for the dashboard's timeline (the metrics' steps are added to it). */
  timeline?: Omit<TurnTimeline, 'steps'>;
};

export class TurnRecorder {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly worker: string;
  private readonly logger: Logger;
  private readonly maxLen: number;
  private readonly timezone: string;
  private readonly now: () => Date;
  private readonly running: RedisRunningTurns;

  constructor(options: TurnRecorderOptions) {
    this.redis = options.redis;
    this.running = new RedisRunningTurns(options.redis, options.prefix);
    this.prefix = options.prefix;
    this.worker = options.worker;
    this.logger = options.logger;
    this.maxLen = options.maxLen ?? TURNS_STREAM_MAXLEN;
    this.timezone = options.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
    this.now = options.now ?? (() => new Date());
    dayOf(new Date(0), this.timezone); // an unknown zone throws RangeError here, not at the first turn
  }

  /**
   * Marks `turn` of `session` as running at iteration 0: the session's one
   * running-turn record, which `/stop` and the heartbeat read too. Unlike the
   * other records this one throws when Redis fails (the turn must not run unseen).
   */
  async started(turn: string, session: string, since = new Date()): Promise<void> {
    await this.running.mark({ turn, session, since: since.toISOString(), iteration: 0, worker: this.worker });
  }

  /** Removes the session's running-turn record (when a turn ends without figures, too). */
  async clear(session: string): Promise<void> {
    await this.running.clear(session);
  }

  /** Returns the `onIteration` callback of a turn: updates its running entry. */
  onIteration(turn: string, session: string, since: string): (iteration: number) => void {
    return (iteration) => {
      void this.setRunning(turn, { session, since, iteration });
    };
  }

  /**
   * Removes the running entry (when this worker's) and appends the turn's figures to the stream.
   * Resolves to true when that script ran (no {@link clear} needed), false when it failed (logged).
   */
  async finished(turn: string, end: TurnEnd): Promise<boolean> {
    const steps = 'metrics' in end ? (end.metrics.steps ?? []) : [];
    const timeline = end.timeline ? { timeline: { ...end.timeline, steps } } : {};
    const record: TurnRecord =
      'metrics' in end
        ? {
            turn,
            session: end.metrics.sessionKey,
            worker: this.worker,
            at: Date.now(),
            wallMs: end.metrics.wallMs,
            llmCalls: end.metrics.llmCalls,
            promptTokens: end.metrics.promptTokens,
            cachedTokens: end.metrics.cachedTokens ?? 0,
            cacheWriteTokens: end.metrics.cacheWriteTokens ?? 0,
            completionTokens: end.metrics.completionTokens,
            toolCalls: end.metrics.toolCalls,
            outcome: end.metrics.outcome,
            ...(end.metrics.model ? { model: end.metrics.model } : {}),
            fallbacks: end.metrics.fallbacks ?? 0,
            models: end.metrics.models ?? {},
            ...timeline,
          }
        : {
            turn,
            session: end.session,
            worker: this.worker,
            at: Date.now(),
            wallMs: end.wallMs,
            llmCalls: 0,
            promptTokens: 0,
            cachedTokens: 0,
            cacheWriteTokens: 0,
            completionTokens: 0,
            toolCalls: [],
            fallbacks: 0,
            models: {},
            outcome: 'error',
            error: end.error.slice(0, 500),
            ...timeline,
          };
    try {
      const usage = usageOf(record);
      await runScript(
        this.redis,
        FINISHED,
        keys.running(this.prefix, record.session),
        opsKeys.turns(this.prefix),
        opsKeys.totals(this.prefix),
        opsKeys.usageDay(this.prefix, dayOf(this.now(), this.timezone)),
        opsKeys.usageSessions(this.prefix),
        this.maxLen,
        JSON.stringify(record),
        USAGE_DAYS_KEPT * 86_400,
        JSON.stringify({ totals: totalsOf(record), day: usage.day, sessions: usage.sessions }),
        this.worker,
      );
      return true;
    } catch (err) {
      this.logger.warn({ err: describeError(err), turn }, 'turn figures not recorded');
      return false;
    }
  }

  private async setRunning(
    turn: string,
    entry: { session: string; since: string; iteration: number },
  ): Promise<void> {
    try {
      await this.running.mark({ turn, ...entry, worker: this.worker });
    } catch (err) {
      this.logger.debug({ err: describeError(err), turn }, 'running turn not recorded');
    }
  }
}

/** The increments a finished turn adds to the totals hash. */
export function totalsOf(record: TurnRecord): Array<[string, number]> {
  const out: Array<[string, number]> = [
    [totalsFields.outcome(record.outcome), 1],
    [totalsFields.promptTokens, record.promptTokens],
    [totalsFields.cachedTokens, record.cachedTokens],
    [totalsFields.cacheWriteTokens, record.cacheWriteTokens],
    [totalsFields.completionTokens, record.completionTokens],
    [totalsFields.llmCalls, record.llmCalls],
    [totalsFields.toolCalls, record.toolCalls.length],
    [totalsFields.toolFailures, record.toolCalls.filter((t) => !t.ok).length],
    [totalsFields.latencyCount, 1],
    [totalsFields.latencySumMs, Math.round(record.wallMs)],
    [totalsFields.fallbacks, record.fallbacks],
    ...Object.entries(record.models).map(([model, calls]): [string, number] => [
      totalsFields.modelCalls(model),
      calls,
    ]),
  ];
  for (const le of LATENCY_BUCKETS_S) {
    if (record.wallMs <= le * 1000) out.push([totalsFields.latencyBucket(le), 1]);
  }
  return out;
}

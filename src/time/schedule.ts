/**
 * Schedules for scheduled tasks: parsing the cron tool's `at` / `in_seconds` /
 * `every_seconds` / `cron` (+ `tz`) into one Schedule, the next run of a
 * schedule; wall-clock time in a zone is zone.ts's. Pure: imports nothing
 * of magpie's, so the bus's cron store, the cron tool and the scheduler share it.
 */
import { CronExpressionParser } from 'cron-parser';
import { formatInZone, zonedWallTimeToUtc } from './zone.js';

// Re-exported for the callers that schedule too; code that only reads the clock imports zone.js.
export { formatInZone, type WallTime, wallTimeIn, zonedWallTimeToUtc, zoneOffsetMs } from './zone.js';

/** A parsed schedule. `tz` is the zone its times are stated and shown in. */
export type Schedule =
  | { kind: 'once'; runAt: number; tz: string; description: string }
  | { kind: 'every'; everyMs: number; tz: string; description: string }
  | { kind: 'cron'; pattern: string; tz: string; description: string };

/** What the cron tool receives; exactly one of the four kinds must be set. */
export interface ScheduleInput {
  at?: string | undefined;
  in_seconds?: number | undefined;
  every_seconds?: number | undefined;
  cron?: string | undefined;
  tz?: string | undefined;
}

export interface ParseScheduleOptions {
  /** The zone used when `tz` is not given (config.timezone). */
  defaultTz: string;
  /** The current time in ms. @defaultValue Date.now() */
  now?: number;
  /** The shortest allowed `every_seconds`. @defaultValue 60 */
  minEverySeconds?: number;
}

/** A schedule, or a message the model can act on. */
export type ParseScheduleResult = { ok: true; schedule: Schedule } | { ok: false; error: string };

const AT_PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** True when `tz` is an IANA zone name this runtime knows. */
export function isValidTimeZone(tz: string): boolean {
  if (tz.trim() === '') return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch (_err) {
    return false;
  }
}

/**
 * Parses the cron tool's schedule fields. Times without an offset are wall
 * clock in `tz` (or the default zone), never silently UTC.
 * @example parseSchedule({ cron: '0 9 * * 1-5', tz: 'Europe/Lisbon' }, { defaultTz: 'UTC' })
 */
export function parseSchedule(input: ScheduleInput, options: ParseScheduleOptions): ParseScheduleResult {
  const now = options.now ?? Date.now();
  const minEvery = options.minEverySeconds ?? 60;
  const tz = input.tz?.trim() || options.defaultTz;
  if (!isValidTimeZone(tz)) {
    return { ok: false, error: `"${tz}" is not an IANA time zone; use a name such as Europe/Lisbon or UTC` };
  }
  const given = (['at', 'in_seconds', 'every_seconds', 'cron'] as const).filter(
    (k) => input[k] !== undefined && input[k] !== '',
  );
  if (given.length === 0) {
    return { ok: false, error: 'give exactly one of at, in_seconds, every_seconds or cron (none was given)' };
  }
  if (given.length > 1) {
    return {
      ok: false,
      error: `give exactly one of at, in_seconds, every_seconds or cron (got ${given.join(' and ')})`,
    };
  }
  if (input.at !== undefined) return parseAt(input.at, tz, now);
  if (input.in_seconds !== undefined) {
    const s = input.in_seconds;
    if (!Number.isFinite(s) || s < 1) return { ok: false, error: 'in_seconds must be at least 1' };
    const runAt = now + Math.round(s * 1000);
    return { ok: true, schedule: { kind: 'once', runAt, tz, description: `once, in ${humanSeconds(s)}` } };
  }
  if (input.every_seconds !== undefined) {
    const s = input.every_seconds;
    if (!Number.isInteger(s) || s < minEvery) {
      return {
        ok: false,
        error: `every_seconds must be a whole number of at least ${minEvery}; for calendar times use cron`,
      };
    }
    return {
      ok: true,
      schedule: { kind: 'every', everyMs: s * 1000, tz, description: `every ${humanSeconds(s)}` },
    };
  }
  return parseCron(input.cron ?? '', tz, now);
}

function parseAt(at: string, tz: string, now: number): ParseScheduleResult {
  const m = AT_PATTERN.exec(at.trim());
  if (!m) {
    return {
      ok: false,
      error: `at "${at}" is not an ISO date-time; use e.g. 2026-12-01T09:00 (local to tz) or 2026-12-01T09:00:00Z`,
    };
  }
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((v) => Number(v ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const probe = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  if (
    probe.getUTCMonth() !== month - 1 ||
    probe.getUTCDate() !== day ||
    hour > 23 ||
    minute > 59 ||
    second > 59
  ) {
    return { ok: false, error: `at "${at}" is not a real calendar date and time` };
  }
  const offset = m[7];
  const runAt =
    offset === undefined
      ? zonedWallTimeToUtc({ year, month, day, hour, minute, second }, tz)
      : probe.getTime() - offsetToMs(offset);
  if (runAt <= now) {
    return {
      ok: false,
      error: `at ${formatInZone(runAt, tz)} is in the past (now it is ${formatInZone(now, tz)}); give a future time`,
    };
  }
  return {
    ok: true,
    schedule: { kind: 'once', runAt, tz, description: `once, at ${formatInZone(runAt, tz)}` },
  };
}

function parseCron(pattern: string, tz: string, now: number): ParseScheduleResult {
  const trimmed = pattern.trim().replace(/\s+/g, ' ');
  if (trimmed.split(' ').length !== 5) {
    return {
      ok: false,
      error: `cron "${pattern}" must have 5 fields (minute hour day-of-month month day-of-week), e.g. "0 9 * * 1-5"`,
    };
  }
  try {
    CronExpressionParser.parse(trimmed, { tz, currentDate: new Date(now) }).next();
  } catch (err) {
    return { ok: false, error: `cron "${pattern}" is not valid (${(err as Error).message})` };
  }
  return {
    ok: true,
    schedule: { kind: 'cron', pattern: trimmed, tz, description: `cron "${trimmed}" (${tz})` },
  };
}

/**
 * The first run of `schedule` strictly after `after` (ms), or undefined when a
 * one-shot schedule has passed. For `every` it is one interval after `after`
 * (a new scheduler's first run; later runs follow the stored scheduler).
 */
export function nextRun(schedule: Schedule, after: number): number | undefined {
  switch (schedule.kind) {
    case 'once':
      return schedule.runAt > after ? schedule.runAt : undefined;
    case 'every':
      return after + schedule.everyMs;
    case 'cron':
      return CronExpressionParser.parse(schedule.pattern, { tz: schedule.tz, currentDate: new Date(after) })
        .next()
        .getTime();
  }
}

/**
 * The shortest time between two runs of `schedule` (ms): the interval of an
 * `every`, the smallest gap between a cron pattern's runs in the week after
 * `after` (at most 1,500 runs looked at: past that, runs are under 7 minutes
 * apart on average, so a shorter gap has been seen), undefined for a one-shot.
 *
 * @example
 * shortestGapMs({ kind: 'cron', pattern: '*\/5 9 * * *', tz: 'UTC', description: '' }, Date.now()) // 300000
 */
export function shortestGapMs(schedule: Schedule, after: number): number | undefined {
  if (schedule.kind === 'once') return undefined;
  if (schedule.kind === 'every') return schedule.everyMs;
  const runs = CronExpressionParser.parse(schedule.pattern, {
    tz: schedule.tz,
    currentDate: new Date(after),
  });
  const horizon = after + 8 * 24 * 3_600_000;
  let shortest: number | undefined;
  try {
    let previous = runs.next().getTime();
    for (let i = 0; i < 1_500; i++) {
      const next = runs.next().getTime();
      shortest = Math.min(shortest ?? Number.POSITIVE_INFINITY, next - previous);
      if (next > horizon) break;
      previous = next;
    }
  } catch {
    // No further run (a date that never comes again): the gaps seen so far are all there is.
  }
  return shortest;
}

/** The next `count` runs after `after` (for tests and listings). */
export function nextRuns(schedule: Schedule, after: number, count: number): number[] {
  const runs: number[] = [];
  let cursor = after;
  for (let i = 0; i < count; i++) {
    const next = nextRun(schedule, cursor);
    if (next === undefined) break;
    runs.push(next);
    cursor = next;
  }
  return runs;
}

function offsetToMs(offset: string): number {
  if (offset.toUpperCase() === 'Z') return 0;
  const m = /^([+-])(\d{2}):?(\d{2})?$/.exec(offset)!;
  const sign = m[1] === '-' ? -1 : 1;
  return sign * (Number(m[2]) * 3_600_000 + Number(m[3] ?? 0) * 60_000);
}

/** "90 seconds" → "1 min 30 s" style text for descriptions. */
export function humanSeconds(seconds: number): string {
  const s = Math.round(seconds);
  const units: Array<[number, string]> = [
    [86_400, 'd'],
    [3_600, 'h'],
    [60, 'min'],
    [1, 's'],
  ];
  const out: string[] = [];
  let rest = s;
  for (const [size, name] of units) {
    if (rest >= size) {
      out.push(`${Math.floor(rest / size)} ${name}`);
      rest %= size;
    }
  }
  return out.length === 0 ? '0 s' : out.join(' ');
}

/**
 * Wall-clock time in an IANA time zone (Intl only): the fields of an instant,
 * a zone's offset, the instant a wall time names, and how an instant is shown.
 * Apart from schedule.ts so code that only reads the clock (the budget's day,
 * active hours) does not load cron-parser.
 */
/** Wall-clock fields of an instant in a zone. */
export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  weekday: string;
}

const wallFormatters = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock time of `ms` in `tz`. */
export function wallTimeIn(ms: number, tz: string): WallTime {
  let fmt = wallFormatters.get(tz);
  if (!fmt) {
    fmt = new Intl.DateTimeFormat('en-GB', {
      timeZone: tz,
      hourCycle: 'h23',
      weekday: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    wallFormatters.set(tz, fmt);
  }
  const parts = fmt.formatToParts(new Date(ms));
  const get = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '0';
  return {
    year: Number(get('year')),
    month: Number(get('month')),
    day: Number(get('day')),
    hour: Number(get('hour')),
    minute: Number(get('minute')),
    second: Number(get('second')),
    weekday: get('weekday'),
  };
}

/** The offset of `tz` from UTC at instant `ms`, in ms (Lisbon in summer: +3 600 000). */
export function zoneOffsetMs(ms: number, tz: string): number {
  const w = wallTimeIn(ms, tz);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return asUtc - Math.floor(ms / 1000) * 1000;
}

/**
 * The instant at which the wall clock in `tz` shows the given time. A time
 * skipped by a DST change resolves to the instant one offset-step later.
 */
export function zonedWallTimeToUtc(wall: Omit<WallTime, 'weekday'>, tz: string): number {
  const asUtc = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);
  const first = asUtc - zoneOffsetMs(asUtc, tz);
  return asUtc - zoneOffsetMs(first, tz);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * Formats an instant as the wall clock in `tz`.
 * @example formatInZone(Date.UTC(2026, 11, 1, 9), 'Europe/Lisbon') // 'Tue 1 Dec 2026 09:00 Europe/Lisbon'
 */
export function formatInZone(ms: number, tz: string): string {
  const w = wallTimeIn(ms, tz);
  const hh = String(w.hour).padStart(2, '0');
  const mm = String(w.minute).padStart(2, '0');
  const ss = w.second === 0 ? '' : `:${String(w.second).padStart(2, '0')}`;
  return `${w.weekday} ${w.day} ${MONTHS[w.month - 1]} ${w.year} ${hh}:${mm}${ss} ${tz}`;
}

/**
 * Days in the memory index: a calendar day is the number YYYYMMDD (in the
 * configured time zone), which sorts and compares as dates do.
 */
import { AppError } from '../../errors/index.js';

/** Turns instants into local days and times for one time zone. */
export class LocalClock {
  readonly timezone: string;
  private readonly format: Intl.DateTimeFormat;
  /** Offsets by UTC day since the epoch (NaN: the offset changes that day). */
  private readonly dayOffsets = new Map<number, number>();
  /** Offsets by quarter hour since the epoch, for days with a change. */
  private readonly slotOffsets = new Map<number, number>();

  /** @throws RangeError for an unknown time zone. */
  constructor(timezone: string) {
    this.timezone = timezone;
    this.format = new Intl.DateTimeFormat('en-CA', {
      timeZone: timezone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    });
  }

  /**
   * The local day (YYYYMMDD) and time (HH:MM) of an instant. The zone's
   * offset is looked up once per day, or per quarter hour on a day it
   * changes (every zone's offset changes on a quarter-hour boundary): a first
   * build dates tens of thousands of messages, and Intl formatting costs
   * microseconds each.
   */
  local(ms: number): { day: number; time: string } {
    const offset = this.offsetOf(ms);
    const wall = new Date(ms + offset);
    const pad = (n: number) => String(n).padStart(2, '0');
    return {
      day: wall.getUTCFullYear() * 10000 + (wall.getUTCMonth() + 1) * 100 + wall.getUTCDate(),
      time: `${pad(wall.getUTCHours())}:${pad(wall.getUTCMinutes())}`,
    };
  }

  /**
   * The zone's offset at an instant, cached per UTC day when it is the same
   * at both ends of the day (no change that day), else per quarter hour.
   */
  private offsetOf(ms: number): number {
    const day = Math.floor(ms / DAY);
    let offset = this.dayOffsets.get(day);
    if (offset === undefined) {
      const start = this.offsetAt(day * DAY);
      offset = start === this.offsetAt((day + 1) * DAY) ? start : Number.NaN;
      remember(this.dayOffsets, day, offset);
    }
    if (!Number.isNaN(offset)) return offset;
    const slot = Math.floor(ms / QUARTER_HOUR);
    let exact = this.slotOffsets.get(slot);
    if (exact === undefined) {
      exact = this.offsetAt(slot * QUARTER_HOUR);
      remember(this.slotOffsets, slot, exact);
    }
    return exact;
  }

  /** How far the zone's wall clock is ahead of UTC at an instant, in ms. */
  private offsetAt(ms: number): number {
    const parts: Record<string, string> = {};
    for (const p of this.format.formatToParts(ms)) parts[p.type] = p.value;
    const wall = Date.UTC(
      Number(parts.year),
      Number(parts.month) - 1,
      Number(parts.day),
      Number(parts.hour),
      Number(parts.minute),
      Number(parts.second),
    );
    return wall - (ms - (ms % 1000));
  }
}

function remember(cache: Map<number, number>, key: number, offset: number): void {
  if (cache.size >= MAX_CACHED_OFFSETS) cache.clear();
  cache.set(key, offset);
}

const QUARTER_HOUR = 15 * 60 * 1000;
const DAY = 24 * 60 * 60 * 1000;
const MAX_CACHED_OFFSETS = 10_000;

/** `20250304` → `2025-03-04`. */
export function formatDay(day: number): string {
  const s = String(day).padStart(8, '0');
  return `${s.slice(0, 4)}-${s.slice(4, 6)}-${s.slice(6, 8)}`;
}

/**
 * `2025-03-04` → `20250304`.
 *
 * @throws AppError TOOL_FAILED naming `what` when the text is not a real YYYY-MM-DD date.
 */
export function parseDay(text: string, what: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text.trim());
  const [year, month, day] = m ? [Number(m[1]), Number(m[2]), Number(m[3])] : [0, 0, 0];
  const d = new Date(Date.UTC(year, month - 1, day));
  if (!m || d.getUTCFullYear() !== year || d.getUTCMonth() !== month - 1 || d.getUTCDate() !== day) {
    throw new AppError('TOOL_FAILED', `${what} "${text}" is not a date; use YYYY-MM-DD, e.g. 2025-03-04`);
  }
  return year * 10000 + month * 100 + day;
}

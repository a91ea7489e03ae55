/**
 * Days in the memory index: a calendar day is the number YYYYMMDD (in the
 * configured time zone), which sorts and compares as dates do.
 */
import { AppError } from '../../errors/index.js';

/** Turns instants into local days and times for one time zone. */
export class LocalClock {
  readonly timezone: string;
  private readonly format: Intl.DateTimeFormat;

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
      hourCycle: 'h23',
    });
  }

  /** The local day (YYYYMMDD) and time (HH:MM) of an instant. */
  local(ms: number): { day: number; time: string } {
    const parts: Record<string, string> = {};
    for (const p of this.format.formatToParts(ms)) parts[p.type] = p.value;
    return {
      day: Number(parts.year) * 10000 + Number(parts.month) * 100 + Number(parts.day),
      time: `${parts.hour}:${parts.minute}`,
    };
  }
}

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

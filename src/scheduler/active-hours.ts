/**
 * Heartbeat active hours: `MAGPIE_HEARTBEAT_ACTIVE_HOURS=08:00-22:00` read in
 * `MAGPIE_TIMEZONE`. A window whose end is before its start spans midnight.
 */
import { wallTimeIn } from '../time/schedule.js';

/** A parsed window in minutes after local midnight; end is exclusive (up to 1440). */
export interface ActiveHours {
  startMinute: number;
  endMinute: number;
  text: string;
}

/** Parses `HH:MM-HH:MM`; undefined when the text is not one (config already validated it). */
export function parseActiveHours(text: string): ActiveHours | undefined {
  const m = /^(\d{2}):(\d{2})-(\d{2}):(\d{2})$/.exec(text.trim());
  if (!m) return undefined;
  const start = Number(m[1]) * 60 + Number(m[2]);
  const end = Number(m[3]) * 60 + Number(m[4]);
  if (start >= 1440 || end > 1440 || Number(m[2]) > 59 || Number(m[4]) > 59) return undefined;
  return { startMinute: start, endMinute: end, text: text.trim() };
}

/**
 * True when instant `ms` falls inside the window, read as wall clock in `tz`.
 * No window (undefined) means always active; equal start and end too.
 * @example isWithinActiveHours(parseActiveHours('22:00-06:00'), Date.now(), 'Europe/Lisbon')
 */
export function isWithinActiveHours(hours: ActiveHours | undefined, ms: number, tz: string): boolean {
  if (!hours || hours.startMinute === hours.endMinute) return true;
  const w = wallTimeIn(ms, tz);
  const minute = w.hour * 60 + w.minute;
  if (hours.startMinute < hours.endMinute) return minute >= hours.startMinute && minute < hours.endMinute;
  return minute >= hours.startMinute || minute < hours.endMinute;
}

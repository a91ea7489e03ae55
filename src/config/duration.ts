/**
 * Durations written as `500ms`, `45s`, `30m`, `2h`, `1d` or a bare `0`, and the
 * bounds configuration puts on them. No parsed value ever exceeds what Node's
 * timers hold (2^31-1 ms, about 24.8 days): a longer one would fire at once.
 */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;

/** The longest delay `setTimeout` and `setInterval` honour (2^31-1 ms); longer ones fire after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The longest duration a configuration variable may hold. */
export const MAX_CONFIG_DURATION_MS = 24 * 3_600_000;

/**
 * Parses a duration into milliseconds; undefined when the text is not one or is
 * longer than {@link MAX_TIMER_MS}.
 * @example parseDuration('30m') // 1_800_000
 */
export function parseDuration(text: string): number | undefined {
  const ms = parseAny(text);
  return ms !== undefined && ms <= MAX_TIMER_MS ? ms : undefined;
}

function parseAny(text: string): number | undefined {
  const trimmed = text.trim();
  if (trimmed === '0') return 0;
  const match = DURATION.exec(trimmed);
  if (!match) return undefined;
  const ms = Math.round(Number(match[1]) * UNIT_MS[match[2]!]!);
  return Number.isFinite(ms) ? ms : undefined;
}

/** What a configured duration must satisfy. */
export interface DurationBounds {
  /** Accept `0` (e.g. "off"). @defaultValue false: the duration must be above 0 */
  allowZero?: boolean;
  /** @defaultValue {@link MAX_CONFIG_DURATION_MS} (24 h) */
  maxMs?: number;
}

/**
 * Parses a configured duration within `bounds`: the milliseconds, or a
 * one-line reason naming what is allowed.
 *
 * @example
 * checkDuration('999999h') // { ok: false, reason: '"999999h" is too long; at most 24h' }
 * checkDuration('0', { allowZero: true }) // { ok: true, ms: 0 }
 */
export function checkDuration(
  text: string,
  bounds: DurationBounds = {},
): { ok: true; ms: number } | { ok: false; reason: string } {
  const maxMs = Math.min(bounds.maxMs ?? MAX_CONFIG_DURATION_MS, MAX_TIMER_MS);
  const ms = parseAny(text);
  const longest = maxMs % 3_600_000 === 0 ? `${maxMs / 3_600_000}h` : formatDuration(maxMs);
  const range = `${bounds.allowZero ? '0 (off) or ' : ''}from 1ms to ${longest}`;
  if (ms === undefined) {
    return { ok: false, reason: `"${text}" is not a duration; use e.g. 45s, 30m or 2h (${range})` };
  }
  if (ms > maxMs) return { ok: false, reason: `"${text}" is too long; at most ${longest}` };
  if (ms === 0) {
    const zero = Number.parseFloat(text.trim()) === 0;
    if (bounds.allowZero && zero) return { ok: true, ms };
    return { ok: false, reason: `"${text}" ${zero ? 'must be above 0' : 'rounds to 0 ms'}; use ${range}` };
  }
  return { ok: true, ms };
}

/** Formats milliseconds back into the largest whole unit, e.g. 90000 → `90s`, 1800000 → `30m`. */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = UNIT_MS[unit]!;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

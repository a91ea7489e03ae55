/** Durations written as `500ms`, `45s`, `30m`, `2h`, `1d` or a bare `0`. */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a duration into milliseconds; returns undefined when the text is not one.
 * @example parseDuration('30m') // 1_800_000
 */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (trimmed === '0') return 0;
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/.exec(trimmed);
  if (!match) return undefined;
  return Math.round(Number(match[1]) * UNIT_MS[match[2]!]!);
}

/** Formats milliseconds back into the largest whole unit, e.g. 90000 → `90s`, 1800000 → `30m`. */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = UNIT_MS[unit]!;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

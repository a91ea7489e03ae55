import { describe, expect, it } from 'vitest';
import {
  formatInZone,
  nextRuns,
  parseSchedule,
  type Schedule,
  shortestGapMs,
} from '../../../src/time/schedule.js';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0); // Sun 22 Nov 2026 12:00 UTC

function ok(input: Parameters<typeof parseSchedule>[0], defaultTz = 'UTC'): Schedule {
  const result = parseSchedule(input, { defaultTz, now: NOW });
  if (!result.ok) throw new Error(`expected a schedule, got error: ${result.error}`);
  return result.schedule;
}
function err(input: Parameters<typeof parseSchedule>[0], defaultTz = 'UTC'): string {
  const result = parseSchedule(input, { defaultTz, now: NOW });
  if (result.ok) throw new Error('expected an error');
  return result.error;
}

describe('parseSchedule', () => {
  it('reads an `at` without offset as wall clock in the given zone, not UTC', () => {
    const s = ok({ at: '2026-12-01T09:00', tz: 'America/New_York' });
    expect(s).toMatchObject({ kind: 'once', runAt: Date.UTC(2026, 11, 1, 14, 0), tz: 'America/New_York' });
  });

  it('reads an `at` without offset and without tz in the configured zone', () => {
    const s = ok({ at: '2027-07-01 09:30' }, 'Europe/Lisbon');
    expect(s).toMatchObject({ kind: 'once', runAt: Date.UTC(2027, 6, 1, 8, 30) });
  });

  it('honours an explicit offset in `at`', () => {
    expect(ok({ at: '2026-12-01T09:00:00Z', tz: 'Asia/Tokyo' })).toMatchObject({
      runAt: Date.UTC(2026, 11, 1, 9),
    });
    expect(ok({ at: '2026-12-01T09:00:00+05:30' })).toMatchObject({
      runAt: Date.UTC(2026, 11, 1, 3, 30),
    });
  });

  it('rejects a past `at`, a malformed one and an impossible date', () => {
    expect(err({ at: '2026-11-22T11:59:00Z' })).toMatch(/in the past/);
    expect(err({ at: 'tomorrow at nine' })).toMatch(/not an ISO date-time/);
    expect(err({ at: '2026-02-30T09:00' })).toMatch(/not a real calendar date/);
  });

  it('turns in_seconds into a one-shot from now', () => {
    expect(ok({ in_seconds: 120 })).toMatchObject({ kind: 'once', runAt: NOW + 120_000 });
    expect(err({ in_seconds: 0 })).toMatch(/at least 1/);
  });

  it('accepts every_seconds at or above the minimum only', () => {
    expect(ok({ every_seconds: 3600 })).toMatchObject({ kind: 'every', everyMs: 3_600_000 });
    expect(err({ every_seconds: 5 })).toMatch(/at least 60/);
  });

  it('rejects a bad cron expression, a 6-field one and a bad time zone', () => {
    expect(err({ cron: '61 * * * *' })).toMatch(/not valid/);
    expect(err({ cron: '0 0 9 * * *' })).toMatch(/5 fields/);
    expect(err({ cron: '0 9 * * *', tz: 'Mars/Olympus' })).toMatch(/not an IANA time zone/);
  });

  it('requires exactly one schedule kind', () => {
    expect(err({ message: 'x' } as never)).toMatch(/none was given/);
    expect(err({ in_seconds: 5, cron: '0 9 * * *' })).toMatch(/in_seconds and cron/);
  });
});

describe('cron schedules across DST changes', () => {
  const daily = ok({ cron: '0 9 * * *', tz: 'Europe/Lisbon' });

  it('runs at 09:00 Lisbon each day across the spring change (offset 0 → +1)', () => {
    const runs = nextRuns(daily, Date.UTC(2026, 2, 27, 12), 3);
    expect(runs).toEqual([
      Date.UTC(2026, 2, 28, 9), // Sat, WET (UTC+0)
      Date.UTC(2026, 2, 29, 8), // Sun, change day, WEST (UTC+1)
      Date.UTC(2026, 2, 30, 8),
    ]);
    expect(runs.map((r) => formatInZone(r, 'Europe/Lisbon'))).toEqual([
      'Sat 28 Mar 2026 09:00 Europe/Lisbon',
      'Sun 29 Mar 2026 09:00 Europe/Lisbon',
      'Mon 30 Mar 2026 09:00 Europe/Lisbon',
    ]);
  });

  it('runs at 09:00 Lisbon each day across the autumn change (offset +1 → 0)', () => {
    const runs = nextRuns(daily, Date.UTC(2026, 9, 23, 12), 3);
    expect(runs).toEqual([Date.UTC(2026, 9, 24, 8), Date.UTC(2026, 9, 25, 9), Date.UTC(2026, 9, 26, 9)]);
  });

  it('resolves an `at` inside the spring-forward gap to a real instant', () => {
    const s = ok({ at: '2027-03-28T01:30', tz: 'Europe/Lisbon' });
    expect(formatInZone((s as { runAt: number }).runAt, 'Europe/Lisbon')).toBe(
      'Sun 28 Mar 2027 02:30 Europe/Lisbon',
    );
  });
});

describe('formatInZone', () => {
  it('names the weekday, date, time and zone', () => {
    expect(formatInZone(Date.UTC(2026, 11, 1, 9), 'Europe/Lisbon')).toBe(
      'Tue 1 Dec 2026 09:00 Europe/Lisbon',
    );
    expect(formatInZone(Date.UTC(2026, 11, 1, 9), 'Asia/Tokyo')).toBe('Tue 1 Dec 2026 18:00 Asia/Tokyo');
  });
});

describe('shortestGapMs', () => {
  const at = Date.UTC(2026, 0, 5, 12, 0);
  const cron = (pattern: string) => ({ kind: 'cron' as const, pattern, tz: 'UTC', description: '' });
  it('is the interval of an every, nothing for a one-shot', () => {
    expect(shortestGapMs({ kind: 'every', everyMs: 60_000, tz: 'UTC', description: '' }, at)).toBe(60_000);
    expect(shortestGapMs({ kind: 'once', runAt: at + 1, tz: 'UTC', description: '' }, at)).toBeUndefined();
  });
  it("is a cron pattern's smallest gap, even one that only comes later in the day", () => {
    expect(shortestGapMs(cron('*/5 9 * * *'), at)).toBe(5 * 60_000);
    expect(shortestGapMs(cron('0 * * * *'), at)).toBe(3_600_000);
    expect(shortestGapMs(cron('0 8 * * 1-5'), at)).toBe(86_400_000);
    expect(shortestGapMs(cron('0,59 9,10 * * *'), at)).toBe(60_000); // 09:59 → 10:00
  });
});

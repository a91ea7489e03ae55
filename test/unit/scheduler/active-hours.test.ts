import { describe, expect, it } from 'vitest';
import { isWithinActiveHours, parseActiveHours } from '../../../src/scheduler/active-hours.js';

const day = parseActiveHours('08:00-22:00');
const night = parseActiveHours('22:00-06:00');

describe('active hours', () => {
  it('parses HH:MM-HH:MM and rejects anything else', () => {
    expect(day).toMatchObject({ startMinute: 480, endMinute: 1320 });
    expect(parseActiveHours('8-22')).toBeUndefined();
  });

  it('reads the window in the configured zone', () => {
    // 07:30 UTC = 08:30 in Lisbon (summer) but 07:30 in UTC.
    const t = Date.UTC(2026, 6, 1, 7, 30);
    expect(isWithinActiveHours(day, t, 'Europe/Lisbon')).toBe(true);
    expect(isWithinActiveHours(day, t, 'UTC')).toBe(false);
  });

  it('treats the end as exclusive', () => {
    expect(isWithinActiveHours(day, Date.UTC(2026, 0, 1, 22, 0), 'UTC')).toBe(false);
    expect(isWithinActiveHours(day, Date.UTC(2026, 0, 1, 21, 59), 'UTC')).toBe(true);
  });

  it('handles a window across midnight', () => {
    expect(isWithinActiveHours(night, Date.UTC(2026, 0, 1, 23, 0), 'UTC')).toBe(true);
    expect(isWithinActiveHours(night, Date.UTC(2026, 0, 1, 5, 59), 'UTC')).toBe(true);
    expect(isWithinActiveHours(night, Date.UTC(2026, 0, 1, 12, 0), 'UTC')).toBe(false);
  });

  it('is always active without a window', () => {
    expect(isWithinActiveHours(undefined, Date.UTC(2026, 0, 1, 3, 0), 'UTC')).toBe(true);
  });
});

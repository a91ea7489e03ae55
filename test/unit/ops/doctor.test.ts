/** The doctor's runner and output: one line per check, the fix under each ✗, time limits, secrets removed. */
import { describe, expect, it } from 'vitest';
import { failed, formatChecks, pass, runChecks, skipped, warned } from '../../../src/ops/doctor.js';

describe('runChecks', () => {
  it('prints ✓, ✗ with its fix, – for skipped, and counts failures', async () => {
    const lines = await runChecks([
      { name: 'one', run: async () => pass('fine') },
      { name: 'two', run: async () => failed('broken', 'do this') },
      { name: 'three', run: async () => skipped('not configured') },
    ]);
    const text = formatChecks(lines);
    expect(text).toBe(
      [
        '✓ one    fine',
        '✗ two    broken',
        '         fix: do this',
        '– three  not configured',
        '1 check failed.',
        '',
      ].join('\n'),
    );
  });

  it('prints ! with its fix for a warning, which does not count as a failure', async () => {
    const lines = await runChecks([
      { name: 'one', run: async () => pass('fine') },
      { name: 'prices', run: async () => warned('no price for x', 'add x=1/0.5/2 to MAGPIE_PRICES') },
    ]);
    expect(lines.map((l) => l.status)).toEqual(['ok', 'warn']);
    expect(formatChecks(lines)).toBe(
      [
        '✓ one     fine',
        '! prices  no price for x',
        '          fix: add x=1/0.5/2 to MAGPIE_PRICES',
        'All checks passed (1 warning).',
        '',
      ].join('\n'),
    );
    const withFailure = await runChecks([
      { name: 'a', run: async () => failed('broken', 'do this') },
      { name: 'b', run: async () => warned('odd', 'look') },
      { name: 'c', run: async () => warned('odder', 'look again') },
    ]);
    expect(formatChecks(withFailure).trimEnd().split('\n').at(-1)).toBe('1 check failed, 2 warnings.');
  });

  it('fails a check that takes longer than its time limit, and aborts it', async () => {
    let aborted = false;
    const started = Date.now();
    const [line] = await runChecks(
      [
        {
          name: 'slow',
          run: (signal) =>
            new Promise(() => {
              signal.addEventListener('abort', () => {
                aborted = true;
              });
            }),
        },
      ],
      { timeoutMs: 100 },
    );
    expect(line?.status).toBe('fail');
    expect(line?.detail).toContain('no answer within 0.1s');
    expect(aborted).toBe(true);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('never prints a secret, in the detail or the fix', async () => {
    const lines = await runChecks(
      [
        {
          name: 'x',
          run: async () => failed('GET /bot123:SECRETTOKEN/getMe failed', 'token SECRETTOKEN is bad'),
        },
      ],
      { secrets: ['123:SECRETTOKEN', 'SECRETTOKEN'] },
    );
    expect(formatChecks(lines)).not.toContain('SECRETTOKEN');
  });

  it('turns a thrown error into a failed line', async () => {
    const [line] = await runChecks([
      {
        name: 'boom',
        run: async () => {
          throw new Error('exploded');
        },
      },
    ]);
    expect(line).toMatchObject({ status: 'fail', detail: 'exploded' });
  });
});

/**
 * The chaos benchmark, short: 50 chats sending through real `magpie gateway`
 * and `magpie worker` processes (dist build) on a redis-server of its own
 * (AOF, appendfsync always), while workers, the gateway and Redis are
 * SIGKILLed and restarted at random moments. Every acknowledged message is
 * answered exactly once, in order; every session file is valid JSONL.
 */
import { describe, expect, it } from 'vitest';
import { runChaos } from '../../../bench/chaos-run.js';
import { build } from '../../e2e/daemon-helpers.js';

describe('chaos: kills and Redis restarts under 50 chats', () => {
  it('loses no acknowledged message and answers none twice', async () => {
    build();
    const report = await runChaos({ durationMs: 45_000, chaosEveryMs: [1_500, 4_000] });
    const summary = JSON.stringify(report);
    expect(report.messages, summary).toBeGreaterThan(500);
    expect(report.kills.worker, summary).toBeGreaterThanOrEqual(1);
    expect(report.kills.gateway, summary).toBeGreaterThanOrEqual(1);
    expect(report.redisRestarts, summary).toBeGreaterThanOrEqual(1);
    expect(report.lost, summary).toBe(0);
    expect(report.duplicates, summary).toBe(0);
    expect(report.answered, summary).toBe(report.messages);
    expect(report.invalidSessionLines, summary).toBe(0);
    expect(report.sessionOrderErrors, summary).toBe(0);
  }, 180_000);
});

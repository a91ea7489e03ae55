/**
 * The chaos benchmark, as the issue asks it of `npm test`: two minutes of 50
 * chats sending through real `magpie gateway` and `magpie worker` processes
 * (dist build) on a redis-server of its own (AOF, appendfsync always), while
 * workers, the gateway and Redis are SIGKILLed and restarted at random
 * moments. Every acknowledged message is answered exactly once, each chat's
 * replies arrive in order, and every session file is valid JSONL with each
 * message once, in order.
 */
import { describe, expect, it } from 'vitest';
import { chaosFailures } from '../../../bench/chaos-check.js';
import { runChaos } from '../../../bench/chaos-run.js';
import { build } from '../../e2e/daemon-helpers.js';

describe('chaos: kills and Redis restarts under 50 chats', () => {
  it('loses no acknowledged message, answers none twice and keeps every chat in order', async () => {
    build();
    const report = await runChaos({ durationMs: 120_000, chaosEveryMs: [1_500, 4_000] });
    const summary = JSON.stringify(report);
    expect(report.messages, summary).toBeGreaterThan(1_000);
    expect(report.kills.worker, summary).toBeGreaterThanOrEqual(2);
    expect(report.kills.gateway, summary).toBeGreaterThanOrEqual(2);
    expect(report.redisRestarts, summary).toBeGreaterThanOrEqual(2);
    expect(report.answered, summary).toBe(report.messages);
    expect(chaosFailures(report), summary).toEqual([]);
  }, 480_000);
});

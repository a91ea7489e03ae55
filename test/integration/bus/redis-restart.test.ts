/** Redis restarted (AOF on) while messages are queued: none is lost. */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Bus } from '../../../src/bus/bus.js';
import { silentLogger } from '../../../src/log/index.js';
import { startRedis } from '../../fakes/redis-server.js';
import { inbound, ScriptedAgent, startHarness, testConfig, waitFor } from './helpers.js';

describe('Redis restart', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups.length = 0;
  });

  it('messages queued before a restart are all answered after it', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-restart-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    let redis = await startRedis({ dir });
    cleanups.push(() => redis.stop());
    const config = testConfig(redis.url);
    const producer = await Bus.connect({ config, logger: silentLogger() });
    cleanups.push(() => producer.close());
    for (let i = 0; i < 5; i++) {
      await producer.publishInbound(inbound(`r${i}`, `before-${i}-a`));
      await producer.publishInbound(inbound(`r${i}`, `before-${i}-b`));
    }

    await redis.stop();
    await expect(producer.publishInbound(inbound('r0', 'while down'))).rejects.toMatchObject({
      code: 'REDIS_UNAVAILABLE',
    });
    redis = await startRedis({ dir, port: redis.port });

    const agent = new ScriptedAgent();
    const harness = await startHarness({ agent, config });
    cleanups.push(() => harness.close());
    // The producer that lived through the restart reconnects and publishes again.
    await waitFor(async () => producer.redis.status === 'ready', 10_000, 'producer reconnected');
    await producer.publishInbound(inbound('r0', 'after'));

    await waitFor(
      () => agent.turns.flatMap((t) => t.contents).length === 11,
      15_000,
      'all messages answered',
    );
    for (let i = 0; i < 5; i++) {
      const seen = agent.turns.filter((t) => t.session === `test:r${i}`).flatMap((t) => t.contents);
      expect(seen.slice(0, 2)).toEqual([`before-${i}-a`, `before-${i}-b`]);
    }
    expect(agent.turns.flatMap((t) => t.contents)).toContain('after');
  });

  it('a worker running through a restart loses no queued message', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-restart-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    let redis = await startRedis({ dir });
    cleanups.push(() => redis.stop());
    const agent = new ScriptedAgent({ iterationMs: 300 });
    const harness = await startHarness({
      agent,
      config: testConfig(redis.url),
      concurrency: 1,
      tuning: { lockDurationMs: 2_000, stalledIntervalMs: 1_000 },
    });
    cleanups.push(() => harness.close());
    for (let i = 0; i < 6; i++) await harness.bus.publishInbound(inbound(`w${i}`, `msg-${i}`));
    await waitFor(() => agent.turns.length >= 1, 5_000, 'first turn done');
    expect(agent.turns.length).toBeLessThan(6); // turns are still queued when Redis goes away

    await redis.stop();
    redis = await startRedis({ dir, port: redis.port });

    await waitFor(
      () => new Set(harness.channel.sent.map((m) => m.chatId)).size === 6,
      20_000,
      'every chat answered after the restart',
    );
    const seen = new Set(agent.turns.flatMap((t) => t.contents));
    for (let i = 0; i < 6; i++) expect(seen.has(`msg-${i}`)).toBe(true);
    for (let i = 0; i < 6; i++) expect(await harness.bus.mailbox(`test:w${i}`).length()).toBe(0);
    // Exactly one reply per chat, even for a turn redone after the restart.
    for (let i = 0; i < 6; i++)
      expect(harness.channel.sent.filter((m) => m.chatId === `w${i}`)).toHaveLength(1);
  });
});

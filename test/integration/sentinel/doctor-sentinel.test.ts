/**
 * `magpie doctor` reads how the Sentinels watch the master (`SENTINEL MASTER`) and warns of a
 * down-after under 2 s: at the Sentinels' 1 s ping period they fail over masters they have just
 * switched to, and a six-minute chaos run lost acknowledged messages that way.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import type { CheckResult } from '../../../src/ops/doctor.js';
import { redisCheckResults } from '../../fakes/doctor.js';
import { type SentinelGroup, startSentinelGroup } from '../../fakes/redis-sentinel.js';

let group: SentinelGroup;

beforeAll(async () => {
  group = await startSentinelGroup({ replicas: 1, downAfterMs: 1_000 });
}, 30_000);
afterAll(async () => {
  await group?.stop();
}, 30_000);

const doctor = () =>
  redisCheckResults(
    parseConfig({
      REDIS_SENTINELS: group.addresses,
      REDIS_SENTINEL_NAME: group.name,
      MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
      MAGPIE_WORKSPACE: os.tmpdir(),
    }),
  );

const sentinelLine = (results: CheckResult[]) => results.find((r) => r.detail.startsWith('Sentinels:'));

describe('doctor with Redis Sentinel', () => {
  it('warns of a down-after under 2 s with the command that fixes it, and passes once it is 5 s', async () => {
    const quick = sentinelLine(await doctor());
    expect(quick).toMatchObject({
      status: 'warn',
      detail: expect.stringMatching(
        /^Sentinels: master down after 1000 ms, quorum 2, 1 replica\(s\): under 2 s, .*can lose acknowledged messages$/,
      ),
      fix: `on each Sentinel: redis-cli -p <port> SENTINEL SET ${group.name} down-after-milliseconds 5000 (it is saved in sentinel.conf)`,
    });

    for (const { port } of group.sentinels) {
      const sentinel = new Redis(port, '127.0.0.1');
      try {
        await sentinel.call('SENTINEL', 'SET', group.name, 'down-after-milliseconds', '5000');
      } finally {
        sentinel.disconnect();
      }
    }
    expect(sentinelLine(await doctor())).toEqual({
      status: 'ok',
      detail: 'Sentinels: master down after 5000 ms, quorum 2, 1 replica(s)',
    });
  }, 30_000);
});

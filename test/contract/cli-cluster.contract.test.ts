/**
 * The CLI channel's whole Channel contract on a three-master Redis Cluster of its own
 * (REDIS_CLUSTER_NODES): magpie's and BullMQ's keys under the hash-tagged prefix, so every
 * script, MULTI and pipeline stays in one slot — the Cluster refuses anything else (CROSSSLOT),
 * and afterwards no node has refused anything so, and every key the run made sits in one slot.
 */
import { tmpdir } from 'node:os';
import { Redis } from 'ioredis';
import { expect } from 'vitest';
import { scanKeys } from '../../src/bus/redis.js';
import { collectStatus } from '../../src/ops/status.js';
import { type RedisClusterHandle, startRedisCluster } from '../fakes/redis-cluster.js';
import { describeChannelContract } from './channel-contract.js';
import { cli } from './cli-harness.js';

let cluster: RedisClusterHandle | undefined;

/** Runs `work` on a plain connection to each of the cluster's nodes. */
async function onEachNode<T>(work: (node: Redis) => Promise<T>): Promise<T[]> {
  if (!cluster) throw new TypeError('the cluster did not start');
  return Promise.all(
    cluster.servers.map(async (server) => {
      const node = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
      try {
        await node.connect();
        return await work(node);
      } finally {
        node.disconnect();
      }
    }),
  );
}

const crossSlotRefusals = (errorstats: string) =>
  Number(/errorstat_CROSSSLOT:count=(\d+)/.exec(errorstats)?.[1] ?? 0);

describeChannelContract('cli on a Redis Cluster', cli, {
  async redis() {
    cluster = await startRedisCluster();
    return { env: { REDIS_CLUSTER_NODES: cluster.nodes }, stop: cluster.stop };
  },
  afterCases: {
    name: "every key the run made shares the prefix's slot, and no node refused a command as CROSSSLOT",
    async check(run) {
      const { bus } = run.role();
      expect(bus.prefix).toMatch(/^\{test-[0-9a-f-]+\}$/);
      expect(bus.describe()).toMatch(
        /^cluster of 3 masters 127\.0\.0\.1:\d+,127\.0\.0\.1:\d+,127\.0\.0\.1:\d+$/,
      );
      // `magpie status` on the Cluster: the masters, the live worker and the outbound queue the
      // run used are found (worker heartbeats and queues are read by SCAN, which goes to every master).
      const status = await collectStatus({
        reader: bus.opsReader,
        url: bus.url,
        prefix: bus.prefix,
        workspace: tmpdir(),
      });
      expect(status.redis.url).toBe(bus.describe());
      expect(status.workers.length).toBeGreaterThan(0);
      expect(status.queues.map((q) => q.name)).toEqual(expect.arrayContaining(['inbound', 'outbound-cli']));
      const made = await scanKeys(bus.redis, `${bus.prefix}:*`);
      // magpie's own keys and BullMQ's (the inbound queue's job hashes and lists) alike.
      expect(made.some((k) => k.startsWith(`${bus.prefix}:seen:`))).toBe(true);
      expect(made.some((k) => /:meta$/.test(k))).toBe(true);
      const perNode = await onEachNode(async (node) => ({
        keys: (await node.keys(`${bus.prefix}:*`)).length,
        slots: new Set(await Promise.all(made.map((k) => node.cluster('KEYSLOT', k)))),
        refused: crossSlotRefusals(await node.info('errorstats')),
      }));
      expect(perNode.filter((n) => n.keys > 0)).toEqual([expect.objectContaining({ keys: made.length })]);
      expect(perNode.every((n) => n.slots.size === 1)).toBe(true);
      expect(perNode.map((n) => n.refused)).toEqual([0, 0, 0]);
      // The count is real: keys of two slots in one script are refused, and counted.
      const refusedNow = await onEachNode(async (node) => {
        await expect(
          node.eval("return redis.call('MGET', KEYS[1], KEYS[2])", 2, 'plain:a', 'plain:b'),
        ).rejects.toThrow(/CROSSSLOT/);
        return crossSlotRefusals(await node.info('errorstats'));
      });
      expect(refusedNow).toEqual([1, 1, 1]);
    },
  },
});

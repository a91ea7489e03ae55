/**
 * The CLI's reply watcher on a Redis Cluster catches up from the reply lists when
 * the Cluster moves its pub/sub connection to another node. The Cluster does not
 * reliably emit 'ready' then (it stays ready itself), and the watcher caught up
 * only on 'ready': this test failed 3 times in 5, and a reply published while the
 * subscriptions moved was left for `magpie send` to time out on. The reply is
 * written to its list without being published, then the node holding the
 * Cluster's pub/sub connection drops it: only a catch-up can deliver it.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { Bus } from '../../../src/bus/bus.js';
import { keys } from '../../../src/bus/keys.js';
import { silentLogger } from '../../../src/log/index.js';
import { type RedisClusterHandle, startRedisCluster } from '../../fakes/redis-cluster.js';
import { waitFor } from '../../fakes/wait-for.js';

let cluster: RedisClusterHandle;

beforeAll(async () => {
  cluster = await startRedisCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

/** Runs `work` on a plain connection to each node. */
async function onEachNode(work: (node: Redis) => Promise<unknown>): Promise<void> {
  await Promise.all(
    cluster.servers.map(async (server) => {
      const node = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
      try {
        await node.connect();
        await work(node);
      } finally {
        node.disconnect();
      }
    }),
  );
}

describe('the CLI reply watcher on a Redis Cluster', () => {
  it('reads the reply lists again when the Cluster moves its subscriptions to another node', async () => {
    const config = parseConfig({
      REDIS_CLUSTER_NODES: cluster.nodes,
      MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
      MAGPIE_WORKSPACE: os.tmpdir(),
    });
    const bus = await Bus.connect({ config, logger: silentLogger() });
    try {
      const address = randomUUID();
      const heard: string[] = [];
      await bus.watchCliReplies(address, (payload) => heard.push(payload));
      const missed = JSON.stringify({ id: 'r-missed', content: 'published while the subscriptions moved' });
      await bus.redis.rpush(keys.cliReplies(bus.prefix, address), missed);
      let dropped = 0;
      await onEachNode(async (node) => {
        const clients = String(await node.call('CLIENT', 'LIST')).split('\n');
        for (const client of clients.filter((c) => / flags=P /.test(c))) {
          dropped += Number(await node.call('CLIENT', 'KILL', 'ID', /^id=(\d+)/.exec(client)?.[1] ?? ''));
        }
      });
      expect(dropped).toBe(1);
      await waitFor(() => heard.includes(missed), 10_000, 'the listed reply caught up');
      expect(heard).toEqual([missed]);
    } finally {
      await bus.close();
    }
  }, 30_000);
});

/**
 * The CLI channel's whole Channel contract on a three-master Redis Cluster of its own
 * (REDIS_CLUSTER_NODES): magpie's and BullMQ's keys under the hash-tagged prefix, so every
 * script, MULTI and pipeline stays in one slot — the Cluster refuses anything else (CROSSSLOT).
 */
import { startRedisCluster } from '../fakes/redis-cluster.js';
import { describeChannelContract } from './channel-contract.js';
import { cli } from './cli-harness.js';

describeChannelContract('cli on a Redis Cluster', cli, {
  async redis() {
    const cluster = await startRedisCluster();
    return { env: { REDIS_CLUSTER_NODES: cluster.nodes }, stop: cluster.stop };
  },
});

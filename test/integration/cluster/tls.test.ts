/**
 * A Redis Cluster over TLS: three masters with a replica each, every node serving TLS only
 * (replication and the Cluster bus too) and asking every client for a certificate the test
 * CA signed. magpie reaches it with REDIS_CLUSTER_NODES, a `rediss://` REDIS_URL (its host
 * not used) and REDIS_TLS_CA, REDIS_TLS_CERT, REDIS_TLS_KEY: every node connection the
 * Cluster client opens, to nodes it learns from the slot map too, goes over TLS. It answers a
 * CLI turn, and after a SIGKILL of the master serving magpie's slot, the next one on the
 * replica that took over. Without its client certificate it is refused at once, saying so:
 * ioredis's Cluster client says only "None of startup nodes is available".
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { Bus } from '../../../src/bus/bus.js';
import { AppError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { redisCheckResults } from '../../fakes/doctor.js';
import { type RedisClusterHandle, startRedisCluster } from '../../fakes/redis-cluster.js';
import { rejectedWith } from '../../fakes/rejection.js';
import { clientTlsEnv, makeTestCertificates, type TestCertificates } from '../../fakes/tls-certs.js';
import { waitFor } from '../../fakes/wait-for.js';
import { answersAcross, busConnector, cleanupsAfterEach } from '../bus/helpers.js';

let certs: TestCertificates;
let cluster: RedisClusterHandle;
let workspace: string;

beforeAll(async () => {
  certs = await makeTestCertificates();
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-tls-workspace-'));
  cluster = await startRedisCluster({ replicas: 1, tls: certs });
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
  certs?.remove();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
}, 30_000);

const cleanups = cleanupsAfterEach();
const connect = busConnector(cleanups);

describe('a Redis Cluster over TLS', () => {
  it("lets doctor reach the masters over TLS and read the first one's certificate", async () => {
    const results = await redisCheckResults(
      parseConfig({
        REDIS_CLUSTER_NODES: cluster.nodes,
        REDIS_URL: 'rediss://cluster',
        ...clientTlsEnv(certs),
        MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
        MAGPIE_WORKSPACE: workspace,
      }),
    );
    expect(results.find((r) => r.detail.startsWith('reachable'))?.detail).toMatch(
      /^reachable at cluster of 3 masters /,
    );
    expect(results.find((r) => r.detail.startsWith("TLS: Redis's certificate"))?.detail).toMatch(
      /^TLS: Redis's certificate \(redis-server\) valid until /,
    );
  });

  // First: the failover below kills one of the startup nodes this names.
  it('says a client certificate is needed when the nodes ask for one and none is set', async () => {
    const config = parseConfig({
      REDIS_CLUSTER_NODES: cluster.nodes,
      REDIS_URL: 'rediss://cluster',
      REDIS_TLS_CA: certs.ca,
      MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
      MAGPIE_WORKSPACE: workspace,
    });
    const error = await rejectedWith(AppError, Bus.connect({ config, logger: silentLogger() }));
    expect(error).toMatchObject({ code: 'REDIS_UNAVAILABLE', exitCode: 3 });
    const first = cluster.nodes.split(',')[0]!;
    expect(error.message).toMatch(
      new RegExp(
        `^Redis at cluster \\(nodes ${cluster.nodes}\\) is unreachable: None of startup nodes is available \\(${first}: .+\\) \\(.*client certificate.*REDIS_TLS_CERT and REDIS_TLS_KEY`,
      ),
    );
  });

  it("answers over TLS, and again after its slot's master is killed and a replica takes over", async () => {
    const config = parseConfig({
      REDIS_CLUSTER_NODES: cluster.nodes,
      REDIS_URL: 'rediss://cluster',
      ...clientTlsEnv(certs),
      MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
      MAGPIE_WORKSPACE: workspace,
    });
    await answersAcross(connect, config, cleanups, 'tls-cluster', async (client) => {
      const oldPort = await cluster.ownerPort(client.prefix);
      await cluster.servers.find((s) => s.port === oldPort)!.kill();
      await waitFor(
        async () => (await cluster.ownerPort(client.prefix, oldPort)) !== oldPort,
        30_000,
        'a replica taking over the slot',
      );
    });
  }, 90_000);
});

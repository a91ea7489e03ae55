import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { Bus } from '../../../src/bus/bus.js';
import {
  answered,
  FailoverTraffic,
  failoverConfig,
  failoverLogger,
  keepServerLogs,
  reportStalledChats,
  stopEach,
} from '../../fakes/failover-traffic.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { type RedisClusterHandle, startRedisCluster } from '../../fakes/redis-cluster.js';
import { waitFor } from '../../fakes/wait-for.js';
import { initedFolder, removeFolder } from '../../fakes/workspace.js';

const CHATS = 4;

describe('Redis Cluster failover with MAGPIE_REDIS_MIN_REPLICAS=1', () => {
  let cluster: RedisClusterHandle;
  let openai: FakeOpenAI;
  let root: string | undefined;
  let workspace: string;
  let role: RunningRole | undefined;
  let platform: Bus | undefined;

  beforeAll(async () => {
    cluster = await startRedisCluster({ replicas: 2 });
    keepServerLogs(cluster.servers);
    openai = await startFakeOpenAI({ responder: (req) => ({ content: `answer to ${lastUserText(req)}` }) });
    ({ dir: root, workspace } = await initedFolder('magpie-cluster-'));
  }, 60_000);

  afterAll(async () => {
    await stopEach([
      ['the platform', () => platform?.close()],
      ['magpie', () => role?.stop()],
      ['the fake OpenAI', () => openai?.close()],
      ['the Cluster', () => cluster?.stop()],
    ]);
    await removeFolder(root);
  }, 60_000);

  it("answers every message acknowledged before a SIGKILL of its slot's master exactly once, none twice, and answers again within seconds", async () => {
    const config = failoverConfig({ REDIS_CLUSTER_NODES: cluster.nodes }, { workspace, openai, root: root! });
    const logger = failoverLogger('cluster-failover');
    role = await startRole({
      role: 'start',
      config,
      logger,
      tuning: { lockDurationMs: 2_000, stalledIntervalMs: 1_000 },
    });
    platform = await Bus.connect({ config, logger });
    const bus = platform;

    const traffic = new FailoverTraffic(bus, {
      chats: CHATS,
      logger,
      // The platform's redelivery pause (no event says the Cluster has its new master).
      beforeRedelivery: () => delay(200),
    });
    await waitFor(
      () => traffic.acknowledged().filter(answered).length >= 12,
      15_000,
      'traffic before the kill',
    );
    const oldPort = await cluster.ownerPort(bus.prefix);
    const victim = cluster.servers.find((s) => s.port === oldPort)!;
    const killedAt = Date.now();
    await victim.kill();
    logger.info({ test: 'kill', oldPort }, 'TEST master SIGKILLed');
    await waitFor(
      async () => (await cluster.ownerPort(bus.prefix, oldPort)) !== oldPort,
      20_000,
      'the replica taking over',
    );
    const failedOverAt = Date.now();
    const sentAfter = () => traffic.acknowledgedAfter(failedOverAt);
    await waitFor(() => sentAfter().filter(answered).length >= 8, 20_000, 'answers after the failover').catch(
      (err) => {
        throw new Error(`${err}; ${traffic.state()}`);
      },
    );
    const firstAnswerAfter = Math.min(...sentAfter().flatMap((s) => [...s.replies.values()]));
    expect(await traffic.stop(), "every chat's last delivery acknowledged").toBe(true);
    // Every acknowledged message, before the kill and after it, is answered once, none twice. (Up
    // to the twelfth pass only those before the kill were required: a chat now and then stayed
    // unanswered for up to a minute, since explained by another test file's redis-server starting
    // on the killed master's freed port; RedisHandle.kill keeps it taken.)
    const all = await traffic.expectEachAnsweredOnce(config.workspace, 30_000).catch(async (err: unknown) => {
      await reportStalledChats(bus, traffic.unansweredChats());
      throw err;
    });
    expect(firstAnswerAfter - killedAt).toBeLessThan(20_000);
    console.info(
      JSON.stringify({
        sent: traffic.sent.length,
        acknowledged: all.length,
        refusals: traffic.refusals.length,
        reasons: [...new Set(traffic.refusals.map((r) => r.replace(/\d+/g, 'N')))],
        failoverMs: failedOverAt - killedAt,
        backMs: firstAnswerAfter - killedAt,
      }),
    );
  }, 150_000);
});

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { Bus } from '../../../src/bus/bus.js';
import { withQuickConnection } from '../../../src/bus/redis.js';
import { describeError } from '../../../src/errors/index.js';
import type { Logger } from '../../../src/log/index.js';
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
import { type SentinelGroup, startSentinelGroup } from '../../fakes/redis-sentinel.js';
import { waitFor } from '../../fakes/wait-for.js';
import { initedFolder, removeFolder } from '../../fakes/workspace.js';

const CHATS = 4;

/** For MAGPIE_TEST_LOG_DIR runs that get stuck: the new master's clients, keys, queue lists and locks. */
async function dumpRedis(port: number, logger: Logger): Promise<void> {
  const redis = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    logger.error({ test: 'clients', clients: await redis.call('CLIENT', 'LIST') }, 'TEST client list');
    const all = await redis.keys('*');
    const info: Record<string, unknown> = {};
    for (const key of all.sort()) {
      const type = await redis.type(key);
      if (type === 'list') info[key] = await redis.lrange(key, 0, -1);
      else if (type === 'string') info[key] = [await redis.get(key), await redis.pttl(key)];
      else if (type === 'zset') info[key] = await redis.zrange(key, '0', '-1', 'WITHSCORES');
      else if (type === 'set') info[key] = await redis.smembers(key);
      else if (type === 'hash' && !key.includes('sessions')) info[key] = await redis.hgetall(key);
      else info[key] = type;
    }
    logger.error({ test: 'keys', info }, 'TEST keys');
  } finally {
    redis.disconnect();
  }
}

describe('Redis Sentinel failover with MAGPIE_REDIS_MIN_REPLICAS=1', () => {
  let group: SentinelGroup;
  let openai: FakeOpenAI;
  let root: string | undefined;
  let workspace: string;
  let role: RunningRole | undefined;
  let platform: Bus | undefined;
  let watcher: Redis | undefined;

  beforeAll(async () => {
    // Three replicas, so that a second failover right after the first (the Sentinels, at 1 s
    // down-after on a loaded machine, taking the fresh master for down too) still leaves the next
    // master a replica. With two (one killed) it has none until the Sentinels demote the master
    // they replaced, 8+ s later, and WAIT rightly refuses everything meanwhile (docs/DEPLOYMENT.md).
    group = await startSentinelGroup({ replicas: 3 });
    // The servers' and Sentinels' own logs, for runs that get stuck.
    keepServerLogs([group.master, ...group.replicas, ...group.sentinels]);
    openai = await startFakeOpenAI({ responder: (req) => ({ content: `answer to ${lastUserText(req)}` }) });
    ({ dir: root, workspace } = await initedFolder('magpie-sentinel-'));
  }, 30_000);

  afterAll(async () => {
    watcher?.disconnect();
    await stopEach([
      ['the platform', () => platform?.close()],
      ['magpie', () => role?.stop()],
      ['the fake OpenAI', () => openai?.close()],
      ['the Sentinel group', () => group?.stop()],
    ]);
    await removeFolder(root);
  }, 60_000);

  it('answers every acknowledged message exactly once through a master SIGKILL, and answers again within seconds', async () => {
    const config = failoverConfig(
      { REDIS_SENTINELS: group.addresses, REDIS_SENTINEL_NAME: group.name },
      { workspace, openai, root: root! },
    );
    const logger = failoverLogger('failover');
    const logDir = process.env.MAGPIE_TEST_LOG_DIR;
    // A stalled turn (its worker's lock lost with the old master) is redone within ~2 s.
    role = await startRole({
      role: 'start',
      config,
      logger,
      tuning: { lockDurationMs: 2_000, stalledIntervalMs: 1_000 },
    });
    platform = await Bus.connect({ config, logger });
    const bus = platform;
    expect(bus.describe()).toBe(
      `sentinel mymaster at 127.0.0.1:${group.master.port} (sentinels ${group.addresses})`,
    );

    const traffic = new FailoverTraffic(bus, {
      chats: CHATS,
      logger,
      // Redelivered as soon as the platform's connection is back (a refused WAIT already waited).
      // A socket the dead master closed may still read 'ready' until its 'close' event is handled:
      // wait for the next 'ready' then too (retrying at once would spin on microtasks and starve I/O).
      // (Not events.once: it rejects on the 'error' events a reconnecting connection emits.)
      beforeRedelivery: async () => {
        if (bus.redis.status !== 'ready' || !bus.redis.stream?.writable) {
          await new Promise((resolve) => bus.redis.once('ready', resolve));
        }
      },
    });

    await waitFor(
      () => traffic.acknowledged().filter(answered).length >= 12,
      15_000,
      'traffic before the kill',
    );
    // Every master switch the Sentinels announce (a second one right after the first is reported).
    const switches: number[] = [];
    watcher = new Redis(group.sentinels[0]!.port, '127.0.0.1');
    watcher.on('message', () => switches.push(Date.now()));
    await watcher.subscribe('+switch-master');
    const oldPort = group.master.port;
    expect(await group.masterPort()).toBe(oldPort);
    const killedAt = Date.now();
    await group.master.kill();
    logger.info({ test: 'kill', oldPort }, 'TEST master SIGKILLed');

    await waitFor(
      async () => (await group.masterPort()) !== oldPort,
      20_000,
      'the Sentinels electing a new master',
    );
    const failedOverAt = Date.now();
    logger.info({ test: 'failover', newPort: await group.masterPort() }, 'TEST new master elected');
    // The service answers messages sent after the kill again.
    const sentAfter = () => traffic.acknowledgedAfter(failedOverAt);
    await waitFor(() => sentAfter().filter(answered).length >= 8, 15_000, 'answers after the failover').catch(
      async (err) => {
        logger.error({ test: 'stuck', state: traffic.state() }, 'TEST no answers after the failover');
        if (logDir) {
          await dumpRedis(await group.masterPort(), logger);
          for (const r of [...group.replicas, group.master]) {
            const info = await withQuickConnection(`redis://127.0.0.1:${r.port}`, (redis) =>
              redis.info('replication'),
            ).catch((e: unknown) => describeError(e));
            logger.error({ test: 'replication', port: r.port, info }, 'TEST replication');
          }
        }
        throw err;
      },
    );
    const firstAnswerAfter = Math.min(...sentAfter().flatMap((s) => [...s.replies.values()]));
    expect(await traffic.stop(), "every chat's last delivery acknowledged").toBe(true);
    const all = await traffic.expectEachAnsweredOnce(config.workspace, 20_000).catch(async (err: unknown) => {
      // Evidence for a chat that stalls (seen now and then under heavy load, cause not found):
      // what Redis holds for it (mailbox, pending mark, turn job, outbound lane) and what was logged about it.
      await reportStalledChats(bus, traffic.unansweredChats());
      throw err;
    });

    // The service came back quickly, and the platform's connection moved to the new master (the kill
    // was felt). Refused publishes are counted, not required: all four chats may sit in their reply
    // subscription (which waits for Redis) through the outage and publish only once it is back.
    expect(firstAnswerAfter - killedAt).toBeLessThan(10_000);
    expect(bus.describe()).toContain(`at 127.0.0.1:${await group.masterPort()}`);
    console.info(
      JSON.stringify({
        sent: traffic.sent.length,
        acknowledged: all.length,
        refusals: traffic.refusals.length,
        failoverMs: failedOverAt - killedAt,
        switchesMs: switches.map((at) => at - killedAt),
        backMs: firstAnswerAfter - killedAt,
      }),
    );
  }, 60_000);
});

/**
 * "Acknowledged means replicated" through a Redis Cluster failover: three masters
 * with two replicas each (test/fakes/redis-cluster.ts, cluster-node-timeout 2 s),
 * magpie (`start`, the fake OpenAI) on REDIS_CLUSTER_NODES with
 * MAGPIE_REDIS_MIN_REPLICAS=1, and a platform sending continuously on four chats.
 * The master serving magpie's slot is SIGKILLed mid-traffic and one of its
 * replicas takes over: the platform redelivers whatever was not acknowledged, as
 * Telegram would; every acknowledged message is answered exactly once (one answer,
 * one user entry in its session), and the service answers again within seconds.
 * Two replicas, so that the new master still has one to confirm its writes.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { closedWithin } from '../../../src/bus/bounded-close.js';
import { Bus } from '../../../src/bus/bus.js';
import { describeError } from '../../../src/errors/index.js';
import { createLogger, silentLogger } from '../../../src/log/index.js';
import { roleConfig } from '../../fakes/config.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { type RedisClusterHandle, startRedisCluster } from '../../fakes/redis-cluster.js';
import { waitFor } from '../../fakes/wait-for.js';
import { initedFolder, removeFolder } from '../../fakes/workspace.js';

const CHATS = 4;

/** One message the platform sent: acknowledged once its publish resolved; its answers by outbound id. */
interface Sent {
  token: string;
  chatId: string;
  acknowledgedAt?: number;
  /** Outbound id → time heard (the reply list and pub/sub may both bring one: taken once by id). */
  replies: Map<string, number>;
}

describe('Redis Cluster failover with MAGPIE_REDIS_MIN_REPLICAS=1', () => {
  let cluster: RedisClusterHandle;
  let openai: FakeOpenAI;
  let root: string | undefined;
  let workspace: string;
  let role: RunningRole | undefined;
  let platform: Bus | undefined;

  beforeAll(async () => {
    cluster = await startRedisCluster({ replicas: 2 });
    const logDir = process.env.MAGPIE_TEST_LOG_DIR;
    if (logDir) {
      for (const server of cluster.servers) {
        const file = createWriteStream(path.join(logDir, `redis-${server.port}.log`));
        server.process.stdout?.on('data', (chunk: Buffer) => file.write(chunk));
      }
    }
    openai = await startFakeOpenAI({ responder: (req) => ({ content: `answer to ${lastUserText(req)}` }) });
    ({ dir: root, workspace } = await initedFolder('magpie-cluster-'));
  }, 60_000);

  afterAll(async () => {
    const bounded = async (what: string, closing: Promise<unknown> | undefined) => {
      if (closing && !(await closedWithin(closing, 15_000)))
        throw new Error(`${what} did not stop within 15 s`);
    };
    await bounded('the platform', platform?.close());
    await bounded('magpie', role?.stop());
    await bounded('the fake OpenAI', openai?.close());
    await bounded('the Cluster', cluster?.stop());
    await removeFolder(root);
  }, 60_000);

  it("answers every acknowledged message exactly once through a SIGKILL of its slot's master, and answers again within seconds", async () => {
    const config = roleConfig(
      { workspace, openai },
      {
        REDIS_URL: undefined,
        REDIS_CLUSTER_NODES: cluster.nodes,
        MAGPIE_REDIS_MIN_REPLICAS: '1',
        MAGPIE_STATE_DIR: path.join(root!, 'state'),
        MAGPIE_STREAM: 'off',
        MAGPIE_MAX_CALLS_PER_MINUTE: '10000',
      },
    );
    const logDir = process.env.MAGPIE_TEST_LOG_DIR;
    const logger = logDir
      ? createLogger({
          level: 'debug',
          destination: createWriteStream(path.join(logDir, `cluster-failover-${Date.now()}.log`)),
        })
      : silentLogger();
    role = await startRole({
      role: 'start',
      config,
      logger,
      tuning: { lockDurationMs: 2_000, stalledIntervalMs: 1_000 },
    });
    platform = await Bus.connect({ config, logger });
    const bus = platform;

    const sent: Sent[] = [];
    const refusals: string[] = [];
    let sending = true;

    async function deliver(s: Sent): Promise<void> {
      const address = randomUUID();
      await bus.watchCliReplies(address, (payload) => {
        const out = JSON.parse(payload) as { id: string; kind?: string };
        if (out.kind === 'reply' && !s.replies.has(out.id)) s.replies.set(out.id, Date.now());
      });
      const message = {
        id: `cli:${address}`,
        channel: 'cli',
        chatId: s.chatId,
        senderId: 'cli',
        content: s.token,
        metadata: { replyAddress: address },
      };
      for (;;) {
        try {
          await bus.publishInbound(message);
          s.acknowledgedAt = Date.now();
          return;
        } catch (err) {
          refusals.push(describeError(err));
          logger.info({ test: 'refusal', tok: s.token, err: describeError(err) }, 'TEST publish refused');
          // The platform's redelivery pause (no event says the Cluster has its new master).
          await delay(200);
        }
      }
    }

    const chats = Array.from({ length: CHATS }, async (_, c) => {
      for (let i = 0; sending; i++) {
        const s: Sent = { token: `<c${c}-m${i}>`, chatId: `failover-${c}`, replies: new Map() };
        sent.push(s);
        await deliver(s);
      }
    });
    const acknowledged = () => sent.filter((s) => s.acknowledgedAt !== undefined);
    const answered = (s: Sent) => s.replies.size > 0;

    await waitFor(() => acknowledged().filter(answered).length >= 12, 15_000, 'traffic before the kill');
    const oldPort = await cluster.ownerPort(bus.prefix);
    const victim = cluster.servers.find((s) => s.port === oldPort)!;
    const killedAt = Date.now();
    victim.process.kill('SIGKILL');
    logger.info({ test: 'kill', oldPort }, 'TEST master SIGKILLed');
    await waitFor(
      async () => (await cluster.ownerPort(bus.prefix, oldPort)) !== oldPort,
      20_000,
      'the replica taking over',
    );
    const failedOverAt = Date.now();
    const sentAfter = () => sent.filter((s) => (s.acknowledgedAt ?? 0) > failedOverAt);
    await waitFor(() => sentAfter().filter(answered).length >= 8, 20_000, 'answers after the failover').catch(
      (err) => {
        const state = sent.map((s) => `${s.token}:${s.acknowledgedAt ? 'ack' : 'unack'}:${s.replies.size}`);
        throw new Error(`${err}; ${state.join(' ')}`);
      },
    );
    const firstAnswerAfter = Math.min(...sentAfter().flatMap((s) => [...s.replies.values()]));
    sending = false;
    expect(await closedWithin(Promise.all(chats), 15_000), "every chat's last delivery acknowledged").toBe(
      true,
    );
    const all = acknowledged();
    // A reply whose job's BullMQ move failed mid-failover waits for its lock (30 s) to lapse and
    // the stalled check (15 s) to hand it back: its chat is answered within about 45 s.
    await waitFor(() => all.every(answered), 60_000, 'every acknowledged message answered').catch((err) => {
      const lost = all.filter((s) => !answered(s));
      throw new Error(`${err}; unanswered: ${lost.map((s) => s.token)}`);
    });
    const sessions = path.join(config.workspace, 'sessions');
    const userLines = readdirSync(sessions)
      .filter((f) => f.endsWith('.jsonl'))
      .flatMap((f) => readFileSync(path.join(sessions, f), 'utf8').split('\n'))
      .filter((line) => line.includes('"role":"user"'));
    for (const s of all) {
      expect(s.replies.size, `answers to ${s.token}`).toBe(1);
      expect(userLines.filter((line) => line.includes(s.token)).length, `session entries of ${s.token}`).toBe(
        1,
      );
    }
    expect(firstAnswerAfter - killedAt).toBeLessThan(20_000);
    console.info(
      JSON.stringify({
        sent: sent.length,
        acknowledged: all.length,
        refusals: refusals.length,
        reasons: [...new Set(refusals.map((r) => r.replace(/\d+/g, 'N')))],
        failoverMs: failedOverAt - killedAt,
        backMs: firstAnswerAfter - killedAt,
      }),
    );
  }, 150_000);
});

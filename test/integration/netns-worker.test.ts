/**
 * A worker on a second machine, simulated: `magpie worker` runs in a network
 * namespace of its own (test/fakes/netns.ts) with its own state folder and
 * reaches Redis (password required) and the model only at this machine's veth
 * address, as another host would; the workspace is the shared folder. It joins
 * the bus and takes turns, and when it is SIGKILLed mid-turn the messages it
 * held are answered once each by a worker on this machine.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/app/config.js';
import { Bus } from '../../src/bus/bus.js';
import { INBOUND_QUEUE, outboundQueueName } from '../../src/bus/queues.js';
import { CliChannel } from '../../src/channels/cli/cli-channel.js';
import { sendAndWait } from '../../src/channels/cli/client.js';
import { OutboundDelivery } from '../../src/delivery/outbound-delivery.js';
import { silentLogger } from '../../src/log/index.js';
import { BIN, build, daemonEnv, magpie, type Proc, stop, tempWorkspace } from '../e2e/daemon-helpers.js';
import { createNetns, type Netns, removeLeftovers, startRelay } from '../fakes/netns.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { type RedisHandle, startRedis } from '../fakes/redis-server.js';
import { waitFor } from '../fakes/wait-for.js';

/** Quick stalled-job recovery, so a killed worker's turns are taken over within seconds. */
const FAST_LOCKS = ['--lock-duration', '2s', '--stalled-interval', '1s'];

/** A process's output, and a wait for a line of it. */
function watched(child: ChildProcess) {
  let out = '';
  const listeners = new Set<() => void>();
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      for (const l of listeners) l();
    });
  }
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  return {
    child,
    exited,
    output: () => out,
    waitFor: (pattern: RegExp, timeoutMs = 30_000) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!pattern.test(out)) return;
          done();
          resolve();
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out waiting for ${pattern}; output: ${out.slice(-800)}`));
        }, timeoutMs);
        const onExit = () => {
          done();
          reject(new Error(`exited before ${pattern}; output: ${out.slice(-800)}`));
        };
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
        };
        listeners.add(check);
        child.once('exit', onExit);
        check();
      }),
  };
}

describe('a worker in a network namespace of its own (a second machine)', () => {
  let netns: Netns;
  let redis: RedisHandle;
  let fake: FakeOpenAI;
  let relay: Awaited<ReturnType<typeof startRelay>>;
  let bus: Bus;
  let delivery: OutboundDelivery;
  let workspace: string;
  const password = randomBytes(12).toString('hex');
  const prefix = `netns-${randomBytes(6).toString('hex')}`;
  const procs: Proc[] = [];
  const farProcs: ChildProcess[] = [];

  beforeAll(async () => {
    // No skip: a machine where this cannot run fails here with the `ip` command's own words.
    netns = createNetns();
    build();
    redis = await startRedis({ args: ['--bind', '127.0.0.1', netns.hostIp, '--requirepass', password] });
    fake = await startFakeOpenAI({ responder: () => ({ content: 'ok' }) });
    relay = await startRelay(netns.hostIp, { host: '127.0.0.1', port: Number(new URL(fake.baseURL).port) });
    workspace = tempWorkspace();
    const config = parseConfig({
      REDIS_URL: `redis://:${password}@127.0.0.1:${redis.port}`,
      MAGPIE_QUEUE_PREFIX: prefix,
    });
    const logger = silentLogger();
    bus = await Bus.connect({ config, logger });
    delivery = await OutboundDelivery.start({ bus, channel: new CliChannel({ bus, logger }), logger });
  }, 120_000);

  afterAll(async () => {
    for (const child of farProcs)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const p of procs) await stop(p);
    await delivery?.close();
    await bus?.close();
    await relay?.close();
    await fake?.close();
    await redis?.stop();
    netns?.remove();
  }, 60_000);

  /** `magpie worker` inside the namespace: Redis and the model at this machine's veth address only. */
  function farWorker() {
    const env = daemonEnv({
      REDIS_URL: `redis://:${password}@${netns.hostIp}:${redis.port}`,
      OPENAI_BASE_URL: `http://${netns.hostIp}:${relay.port}/v1`,
      MAGPIE_WORKSPACE: workspace,
      MAGPIE_QUEUE_PREFIX: prefix,
      MAGPIE_STREAM: 'off',
      XDG_STATE_HOME: mkdtempSync(path.join(os.tmpdir(), 'magpie-far-state-')),
    });
    const child = netns.spawn([process.execPath, BIN, 'worker', ...FAST_LOCKS], env);
    farProcs.push(child);
    return watched(child);
  }

  it("a dead run's namespace and veth link are removed by the next run", async () => {
    const dead = spawn(process.execPath, ['-e', '']);
    await once(dead, 'exit');
    const name = `magpie-nt-${dead.pid}`;
    execFileSync('ip', ['netns', 'add', name]);
    execFileSync('ip', [
      'link',
      'add',
      `mpnt${dead.pid}h`,
      'type',
      'veth',
      'peer',
      'name',
      `mpnt${dead.pid}n`,
    ]);
    removeLeftovers();
    expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toContain(name);
    expect(execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' })).not.toContain(
      `mpnt${dead.pid}h`,
    );
    // This run's own namespace, whose process lives, is kept.
    expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).toContain(netns.name);
  });

  it('the namespace reaches this machine only at the veth address', () => {
    const probe = (host: string) =>
      `require('net').connect(${redis.port}, '${host}').on('connect', () => { console.log('open'); process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(0); })`;
    const run = (host: string) =>
      execFileSync('ip', ['netns', 'exec', netns.name, process.execPath, '-e', probe(host)], {
        encoding: 'utf8',
      }).trim();
    expect(run('127.0.0.1')).toBe('ECONNREFUSED');
    expect(run(netns.hostIp)).toBe('open');
  });

  it('joins the bus and takes turns; its SIGKILL mid-turn loses nothing and answers nothing twice', async () => {
    const far = farWorker();
    await far.waitFor(/magpie is running/);
    const inspector = new Redis(`redis://:${password}@127.0.0.1:${redis.port}`);
    try {
      // Its connections come from the namespace's address.
      const clients = await inspector.client('LIST');
      expect(String(clients)).toContain(`addr=${netns.nsIp}:`);

      // 1. It takes a turn, reaching the model through the veth address.
      fake.setResponder(() => ({ content: 'from the far worker' }));
      const first = await sendAndWait(bus, { content: 'hello far', chatId: 'far-0', timeoutMs: 30_000 });
      expect(first.content).toBe('from the far worker');
      expect(relay.peers.get(netns.nsIp)).toBeGreaterThan(0);

      // 2. Three turns it holds when killed: the model never answers it.
      fake.setResponder(() => ({ content: 'never', delayMs: 120_000 }));
      const before = fake.requests.length;
      const chats = ['far-1', 'far-2', 'far-3'];
      const replies = chats.map((chatId) =>
        sendAndWait(bus, { content: `held ${chatId}`, chatId, timeoutMs: 60_000 }),
      );
      await fake.waitForRequests(before + chats.length, 30_000);
      far.child.kill('SIGKILL');
      expect(await far.exited).toBe('SIGKILL');

      // 3. A worker on this machine takes them over.
      fake.setResponder(() => ({ content: 'taken over' }));
      const near = magpie(
        ['worker', ...FAST_LOCKS],
        daemonEnv({
          REDIS_URL: `redis://:${password}@127.0.0.1:${redis.port}`,
          OPENAI_BASE_URL: fake.baseURL,
          MAGPIE_WORKSPACE: workspace,
          MAGPIE_QUEUE_PREFIX: prefix,
          MAGPIE_STREAM: 'off',
        }),
      );
      procs.push(near);
      const answered = await Promise.all(replies);
      expect(answered.map((r) => r.content)).toEqual(['taken over', 'taken over', 'taken over']);
      await waitFor(
        async () =>
          (await bus.pendingJobs(INBOUND_QUEUE)) + (await bus.pendingJobs(outboundQueueName('cli'))) === 0,
        30_000,
        'the queues to empty',
        100,
      );
      // Once each: one model call per held message after the kill, and each chat's session holds one answer.
      expect(fake.requests.length - before).toBe(chats.length * 2);
      for (const chatId of chats) {
        expect(await inspector.llen(`${prefix}:mailbox:cli:${chatId}`)).toBe(0);
      }
      // One reply delivered per message: the first turn's and the three taken over, none twice.
      const outbound = new Queue(outboundQueueName('cli'), { connection: inspector, prefix });
      try {
        const counts = await outbound.getJobCounts('completed', 'waiting', 'active', 'delayed', 'failed');
        expect(counts).toMatchObject({
          completed: 1 + chats.length,
          waiting: 0,
          active: 0,
          delayed: 0,
          failed: 0,
        });
      } finally {
        await outbound.close();
      }
      // The password never reaches the far worker's output.
      expect(far.output()).not.toContain(password);
    } finally {
      inspector.disconnect();
    }
  }, 120_000);
});

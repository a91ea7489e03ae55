/**
 * Benchmark of the bus. Starts its own redis-server, the fake
 * OpenAI server, and `magpie gateway` + `magpie worker` processes from dist/,
 * then prints one JSON object:
 *
 * - `latency`: `send` → reply with an instant model (p50/p99 ms), beside two
 *   bare BullMQ add→process hops on the same Redis (target: p50 ratio ≤ 2);
 * - `throughput`: turns per second across 1,000 chats;
 * - `slowModel`: 100 chats with a 1 s model, wall time until all answered (target ≤ 1.5 s), with
 *   one worker of 128 turn slots, twice: `justStarted` is the first round, on a worker that has
 *   just started, the main figure the second; `slowModelTwoWorkers` the same with two workers of 64, the
 *   number a deployment runs (ecosystem.config.js's MAGPIE_WORKERS default), one per core here;
 * - `memory`: worker RSS after 10,000 turns across 1,000 sessions (target ≤ 150 MB,
 *   flat in the number of sessions: RSS after the first and the last rounds).
 *
 * Each worker figure also has the worker's idle RSS (started, no turn yet). The latency and
 * slow-model figures carry the CPU time the worker and the gateway spent per turn (from
 * /proc/<pid>/stat): unlike wall times, they hardly move with the machine's load.
 *
 * The workers run with the heap flags a deployment gives them (ecosystem.config.js's
 * `--max-semi-space-size=1`) beside the old-space cap. The cap alone let V8 grow the young
 * generation until the committed heap met the 96 MB limit, and from then on it ran a full
 * mark-compact every ~200 ms with 35 MB live: 79 in 100 turns, three times the worker's CPU.
 *
 *   npx tsx bench/bus.ts [--samples 200] [--turns 10000] [--worker-node-options="--max-old-space-size=96 --max-semi-space-size=1"]
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { AgentRunner, TurnResult } from '../src/agent/types.js';
import { parseConfig } from '../src/app/config.js';
import { Bus } from '../src/bus/bus.js';
import { CliChannel } from '../src/channels/cli/cli-channel.js';
import { sendAndWait } from '../src/channels/cli/client.js';
import { OutboundDelivery } from '../src/delivery/outbound-delivery.js';
import { silentLogger } from '../src/log/index.js';
import { type InboundMessage, sessionKeyOf } from '../src/messages/messages.js';
import { TurnWorker } from '../src/worker/turn-worker.js';
import { daemonEnv, magpie, type Proc, stop, tempWorkspace } from '../test/e2e/daemon-helpers.js';
import { startFakeOpenAI } from '../test/fakes/openai-server.js';
import { startRedis } from '../test/fakes/redis-server.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    samples: { type: 'string', default: '200' },
    turns: { type: 'string', default: '10000' },
    // A modest heap limit keeps V8 from growing the heap lazily (RSS) long before it must collect;
    // a small young generation keeps it from thrashing against that limit (see above).
    'worker-node-options': { type: 'string', default: '--max-old-space-size=96 --max-semi-space-size=1' },
  },
});
const workerNodeOptions = values['worker-node-options'];
const samples = Number(values.samples);
const totalTurns = Number(values.turns);

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return Math.round(sorted[Math.max(0, i)]! * 100) / 100;
}
function summary(xs: number[]) {
  const sorted = [...xs].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), n: xs.length };
}
function progress(step: string, data: unknown): void {
  process.stderr.write(`bench: ${step} ${JSON.stringify(data)}\n`);
}
/** CPU time (user + system, ms) a process has used so far. */
function cpuMs(pid: number): number {
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th, in ticks.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** CPU ms per turn of each process while `run` took `turns` turns. */
async function cpuPerTurn(procs: Record<string, Proc>, turns: number, run: () => Promise<void>) {
  const before = Object.fromEntries(Object.entries(procs).map(([name, p]) => [name, cpuMs(p.child.pid!)]));
  await run();
  return Object.fromEntries(
    Object.entries(procs).map(([name, p]) => [
      name,
      Math.round(((cpuMs(p.child.pid!) - before[name]!) / turns) * 100) / 100,
    ]),
  );
}

function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Math.round(Number(line?.replace(/\D+/g, '') ?? 0) / 1024);
}

/** Latency of two bare BullMQ hops: add to q1 → worker adds to q2 → worker resolves. */
async function bareHops(url: string, n: number): Promise<number[]> {
  const prefix = `bench-bare-${randomUUID()}`;
  const producer = new Redis(url, { maxRetriesPerRequest: null });
  const q1 = new Queue('hop1', { connection: producer, prefix });
  const q2 = new Queue('hop2', { connection: producer, prefix });
  const waiting = new Map<string, () => void>();
  const c1 = new Redis(url, { maxRetriesPerRequest: null });
  const c2 = new Redis(url, { maxRetriesPerRequest: null });
  const w1 = new Worker(
    'hop1',
    async (job) => void (await q2.add('h', job.data, { removeOnComplete: true })),
    {
      connection: c1,
      prefix,
      concurrency: 16,
    },
  );
  const w2 = new Worker('hop2', async (job) => waiting.get(job.data.id)?.(), {
    connection: c2,
    prefix,
    concurrency: 16,
  });
  await Promise.all([w1.waitUntilReady(), w2.waitUntilReady()]);
  const out: number[] = [];
  for (let i = 0; i < n + 10; i++) {
    const id = randomUUID();
    const done = new Promise<void>((resolve) => waiting.set(id, resolve));
    const t = performance.now();
    await q1.add('h', { id }, { removeOnComplete: true });
    await done;
    if (i >= 10) out.push(performance.now() - t);
  }
  await Promise.all([w1.close(), w2.close(), q1.close(), q2.close()]);
  for (const c of [producer, c1, c2]) c.disconnect();
  return out;
}

/** An agent that answers at once, to measure the bus alone. */
const echoAgent: AgentRunner = {
  async processMessage(messages: InboundMessage | InboundMessage[]): Promise<TurnResult> {
    const head = (Array.isArray(messages) ? messages : [messages])[0]!;
    const sessionKey = sessionKeyOf(head);
    const metrics = {
      sessionKey,
      llmCalls: 0,
      promptTokens: 0,
      completionTokens: 0,
      toolCalls: [],
      wallMs: 0,
      outcome: 'ok' as const,
    };
    return { sessionKey, reply: 'echo', target: { channel: head.channel, chatId: head.chatId }, metrics };
  },
  processDirect: () => Promise.reject(new Error('not used')),
  processHeartbeat: () => Promise.reject(new Error('not used')),
};

/** `send` → reply latency through the real bus, CLI channel and turn worker, with the echo agent, in one process. */
async function busOnly(url: string, n: number): Promise<number[]> {
  const config = parseConfig({ REDIS_URL: url, MAGPIE_QUEUE_PREFIX: `bench-bus-${randomUUID()}` });
  const logger = silentLogger();
  const client = await Bus.connect({ config, logger });
  const workerBus = await Bus.connect({ config, logger, patient: true });
  const worker = new TurnWorker({ bus: workerBus, agent: echoAgent, logger, concurrency: 16 });
  await worker.start();
  const delivery = await OutboundDelivery.start({
    bus: client,
    channel: new CliChannel({ bus: client, logger }),
    logger,
  });
  const out: number[] = [];
  for (let i = 0; i < n + 10; i++) {
    const t = performance.now();
    await sendAndWait(client, { content: 'hi', chatId: `b-${i % 20}`, timeoutMs: 30_000 });
    if (i >= 10) out.push(performance.now() - t);
  }
  await worker.close();
  await delivery.close();
  await Promise.all([client.close(), workerBus.close()]);
  return out;
}

execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'ignore' });
const redis = await startRedis();
const fake = await startFakeOpenAI({ responder: () => ({ content: 'ok' }) });
// The daemon's state folders (magpie's own data) go under a temporary XDG_STATE_HOME, as in the tests.
process.env.XDG_STATE_HOME = mkdtempSync(path.join(os.tmpdir(), 'magpie-bench-state-'));
const workspace = tempWorkspace();
const env = daemonEnv({
  REDIS_URL: redis.url,
  OPENAI_BASE_URL: fake.baseURL,
  MAGPIE_WORKSPACE: workspace,
});
const procs: Proc[] = [
  magpie(['gateway'], env),
  magpie(['worker'], { ...env, NODE_OPTIONS: workerNodeOptions }),
];
const [gateway, worker] = procs as [Proc, Proc];
const config = parseConfig({ REDIS_URL: redis.url, MAGPIE_QUEUE_PREFIX: env.MAGPIE_QUEUE_PREFIX });
const bus = await Bus.connect({ config, logger: silentLogger() });
try {
  await Promise.all([
    gateway.waitFor(/magpie is running/, 30_000),
    worker.waitFor(/magpie is running/, 30_000),
  ]);
  const idleRssMb = rssMb(worker.child.pid!);

  // 1. Latency, one message at a time, after a warm-up.
  const magpieMs: number[] = [];
  const send = async (i: number) => {
    const t = performance.now();
    await sendAndWait(bus, { content: 'hi', chatId: `lat-${i % 20}`, timeoutMs: 30_000 });
    if (i >= 10) magpieMs.push(performance.now() - t);
  };
  for (let i = 0; i < 10; i++) await send(i);
  const cpuMsPerTurn = await cpuPerTurn({ worker, gateway }, samples, async () => {
    for (let i = 10; i < samples + 10; i++) await send(i);
  });
  const bareMs = await bareHops(redis.url, samples);
  const busMs = await busOnly(redis.url, samples);
  const latency = {
    magpie: { ...summary(magpieMs), cpuMsPerTurn },
    busOnlyEchoAgent: summary(busMs),
    bareTwoHops: summary(bareMs),
  };
  progress('latency', latency);

  // 2 and 4. Throughput and memory: rounds of 1,000 chats, one message each, until totalTurns.
  // `--turns 0` skips these rounds (latency and the slow model only).
  const rounds = totalTurns === 0 ? 0 : Math.max(1, Math.round(totalTurns / 1000));
  const rss: number[] = [];
  let firstRoundTps = 0;
  const tStart = performance.now();
  for (let r = 0; r < rounds; r++) {
    const t = performance.now();
    await Promise.all(
      Array.from({ length: 1000 }, (_, c) =>
        sendAndWait(bus, { content: `round ${r}`, chatId: `chat-${c}`, timeoutMs: 120_000 }),
      ),
    );
    if (r === 0) firstRoundTps = Math.round(1000 / ((performance.now() - t) / 1000));
    rss.push(rssMb(worker.child.pid!));
    progress(`round ${r + 1}/${rounds}`, { rssMb: rss.at(-1) });
  }
  const throughput = {
    chats: 1000,
    firstRoundTurnsPerSecond: firstRoundTps,
    overallTurnsPerSecond: Math.round((rounds * 1000) / ((performance.now() - tStart) / 1000)),
  };
  const memory = {
    turns: rounds * 1000,
    sessions: 1000,
    workerConcurrency: 16,
    workerNodeOptions,
    idleRssMb,
    workerRssMbPerRound: rss,
  };

  // 3. 100 chats with a 1 s model: a worker with enough turn slots (the default, 16, suits one person).
  await stop(worker);
  const wide = magpie(['worker', '--concurrency', '128'], { ...env, NODE_OPTIONS: workerNodeOptions });
  procs.push(wide);
  await wide.waitFor(/magpie is running/, 30_000);
  const wideIdleRssMb = rssMb(wide.child.pid!);
  fake.setResponder(() => ({ content: 'slow ok', delayMs: 1000 }));
  /** 100 chats at once (chat ids under `tag`): the wall time until all are answered, and the CPU per turn. */
  const hundredChats = async (tag: string, procsByName: Record<string, Proc>) => {
    const started = performance.now();
    const cpu = await cpuPerTurn(procsByName, 100, async () => {
      await Promise.all(
        Array.from({ length: 100 }, (_, c) =>
          sendAndWait(bus, { content: 'slow', chatId: `${tag}-${c}`, timeoutMs: 60_000 }),
        ),
      );
    });
    return { allAnsweredMs: Math.round(performance.now() - started), cpu };
  };
  // The first round meets a worker that has just started (its code not yet optimised); the second
  // one a worker as a running deployment has it. Both are printed.
  const cold = await hundredChats('slow', { worker: wide, gateway });
  const one = await hundredChats('slow-again', { worker: wide, gateway });
  const slowModel = {
    chats: 100,
    modelMs: 1000,
    workerConcurrency: 128,
    allAnsweredMs: one.allAnsweredMs,
    cpuMsPerTurn: one.cpu,
    justStarted: { allAnsweredMs: cold.allAnsweredMs, cpuMsPerTurn: cold.cpu },
    idleRssMb: wideIdleRssMb,
    rssMbAfter: rssMb(wide.child.pid!),
  };

  // The same with two workers, as ecosystem.config.js deploys them: each turn's CPU on either core.
  await stop(wide);
  const pair = [0, 1].map(() =>
    magpie(['worker', '--concurrency', '64'], { ...env, NODE_OPTIONS: workerNodeOptions }),
  );
  procs.push(...pair);
  await Promise.all(pair.map((w) => w.waitFor(/magpie is running/, 30_000)));
  const twoCold = await hundredChats('slow2', { first: pair[0]!, second: pair[1]!, gateway });
  const two = await hundredChats('slow2-again', { first: pair[0]!, second: pair[1]!, gateway });
  const slowModelTwoWorkers = {
    chats: 100,
    modelMs: 1000,
    workers: 2,
    workerConcurrency: 64,
    allAnsweredMs: two.allAnsweredMs,
    justStartedAllAnsweredMs: twoCold.allAnsweredMs,
    cpuMsPerTurn: {
      workers: Math.round(((two.cpu.first ?? 0) + (two.cpu.second ?? 0)) * 100) / 100,
      gateway: two.cpu.gateway,
    },
  };

  process.stdout.write(
    `${JSON.stringify(
      {
        latency,
        p50Ratio: Math.round((latency.magpie.p50 / latency.bareTwoHops.p50) * 100) / 100,
        busOnlyP50Ratio: Math.round((latency.busOnlyEchoAgent.p50 / latency.bareTwoHops.p50) * 100) / 100,
        throughput,
        slowModel,
        slowModelTwoWorkers,
        memory,
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await bus.close();
  for (const p of procs) await stop(p);
  await fake.close();
  await redis.stop();
}
process.exit(0);

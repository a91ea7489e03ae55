/**
 * A crowd: N chats (10,000 by default) each send one message at once through
 * the CLI channel to a real gateway and 4 worker processes (dist/), on a
 * redis-server of the bench's own, with a fake model that takes 2 s per answer.
 * Every message must be answered exactly once. Prints one JSON object:
 *
 * - `answered`, `duplicates`, `lost` (each reply counted by id, heard or listed), `modelCalls`
 *   (with `--fake-in-process`), the workers' failed model calls and redone turns from their logs;
 * - `latencyMs`: publish → reply heard, p50/p99 (most of it is the queue: the
 *   turns run `workers × concurrency` at a time, 2 s each);
 * - `turnsPerSecond`: chats / the time from the first publish to the last answer;
 * - `workers[].peakRssMb`: each worker's VmHWM from /proc/PID/status (goal ≤ 150 MB);
 *   `peakPssMb` its peak PSS (sampled every 500 ms: shared pages split among the processes that
 *   map them), with the RSS and the file-backed RSS (the node binary, ~60 MB) at that sample;
 * - `redis.usedMemoryPerWaitingMessageBytes`: Redis `used_memory` once every
 *   message is published, less before, over the messages still waiting then.
 *
 *   npx tsx bench/crowd.ts [--chats 10000] [--workers 4] [--concurrency 64] [--model-ms 2000] [--logs DIR] [--fake-in-process]
 *     [--worker-node-options="..."] [--worker-env="MALLOC_ARENA_MAX=1,MALLOC_MMAP_THRESHOLD_=131072"]
 */

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { parseConfig } from '../src/app/config.js';
import { Bus } from '../src/bus/bus.js';
import { safeJson } from '../src/bus/json-topic.js';
import { silentLogger } from '../src/log/index.js';
import { OutboundMessageSchema } from '../src/messages/messages.js';
import { build, daemonEnv, magpie, type Proc, stop, tempWorkspace } from '../test/e2e/daemon-helpers.js';
import { startFakeOpenAI } from '../test/fakes/openai-server.js';
import { startRedis } from '../test/fakes/redis-server.js';
import { waitFor } from '../test/fakes/wait-for.js';

const { values } = parseArgs({
  options: {
    chats: { type: 'string', default: '10000' },
    workers: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '64' },
    'model-ms': { type: 'string', default: '2000' },
    logs: { type: 'string' },
    // By default the fake model runs in a process of its own (test/fakes/openai-server-main.ts): in this one, at
    // 10,000 chats, it shares a loop with every waiting client and its recorded bodies, and calls time out. Here,
    // with this flag, it counts the model calls.
    'fake-in-process': { type: 'boolean', default: false },
    'worker-node-options': { type: 'string', default: '--max-old-space-size=96 --max-semi-space-size=1' },
    // As ecosystem.config.js gives workers: glibc keeps one malloc arena per thread that allocated
    // (V8's compiler and GC threads), each holding its peak, and raises its mmap threshold as large
    // blocks are freed (so later ones stay in the heap); '' for glibc's defaults.
    'worker-env': { type: 'string', default: 'MALLOC_ARENA_MAX=1,MALLOC_MMAP_THRESHOLD_=131072' },
  },
});
const chats = Number(values.chats);
const workerCount = Number(values.workers);
const concurrency = Number(values.concurrency);
const modelMs = Number(values['model-ms']);
const workerNodeOptions = values['worker-node-options'];
const workerEnv = Object.fromEntries(
  values['worker-env']
    .split(',')
    .filter(Boolean)
    .map((pair) => pair.split('=') as [string, string]),
);
for (const [name, n] of Object.entries({ chats, workerCount, concurrency })) {
  if (!Number.isInteger(n) || n < 1) {
    process.stderr.write(`bench: ${name} must be a positive whole number\n`);
    process.exit(2);
  }
}

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return Math.round(sorted[Math.max(0, i)] ?? 0);
}
function progress(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}
/** A /proc/PID/status field in MB (VmHWM: the peak resident set). */
function procMb(pid: number, field: 'VmHWM' | 'VmRSS' | 'RssFile'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return Math.round(Number(line?.replace(/\D+/g, '') ?? 0) / 1024);
}

/**
 * A process's PSS from /proc/PID/smaps_rollup, in MB: its RSS with each shared page split among
 * the processes mapping it (the node binary's code and ICU data, the same pages in every worker).
 */
function pssMb(pid: number): number {
  const kb = /^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1];
  return Math.round(Number(kb ?? 0) / 1024);
}

/** The fake model as a process of its own; `requests` stays empty (it is not this process's to count). */
async function fakeProcess(): Promise<{ baseURL: string; requests: unknown[]; close(): Promise<void> }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'test/fakes/openai-server-main.ts', '--delay-ms', String(modelMs)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  const { baseURL } = JSON.parse(line) as { baseURL: string };
  return {
    baseURL,
    requests: [],
    close: async () => {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
    },
  };
}

/** CPU time (user + system) a process has used, ms, from /proc/PID/stat. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** One chat's message: its reply address, when it was published and when its first reply was heard. */
interface Sent {
  chat: string;
  address: string;
  publishedAt: number;
  answeredAt?: number;
  /** Ids of the replies heard live, and read from the reply list at the end. */
  replyIds: Set<string>;
  unwatch?: () => Promise<void>;
}

process.env.XDG_STATE_HOME = mkdtempSync(path.join(os.tmpdir(), 'magpie-bench-state-'));
build();
// fsync once a second: this bench measures the crowd, not the disk (bench:chaos measures `always`).
const redis = await startRedis({ args: ['--appendfsync', 'everysec'] });
const fake = values['fake-in-process']
  ? await startFakeOpenAI({ responder: () => ({ content: 'answered', delayMs: modelMs }) })
  : await fakeProcess();
const workspace = tempWorkspace();
const env = daemonEnv({
  REDIS_URL: redis.url,
  OPENAI_BASE_URL: fake.baseURL,
  MAGPIE_WORKSPACE: workspace,
  MAGPIE_STREAM: 'off',
  MAGPIE_WORKER_CONCURRENCY: String(concurrency),
  // One message per chat is far below the guard; raised anyway so a retried turn is never refused.
  MAGPIE_MAX_CALLS_PER_MINUTE: '100000',
});
const procs: Proc[] = [magpie(['gateway'], env)];
for (let w = 0; w < workerCount; w++)
  procs.push(magpie(['worker'], { ...env, ...workerEnv, NODE_OPTIONS: workerNodeOptions }));
const config = parseConfig({ REDIS_URL: redis.url, MAGPIE_QUEUE_PREFIX: env.MAGPIE_QUEUE_PREFIX });
const bus = await Bus.connect({ config, logger: silentLogger(), patient: true });
const stats = new Redis(redis.url);
const sent: Sent[] = [];
let answered = 0;
try {
  await Promise.all(procs.map((p) => p.waitFor(/magpie is running/, 60_000)));
  const workers = procs.slice(1);
  const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await stats.info('memory'))?.[1] ?? 0);
  const memoryBefore = await usedMemory();
  const workerCpuBefore = workers.reduce((sum, w) => sum + cpuMs(w.child.pid!), 0);
  const gatewayCpuBefore = cpuMs(procs[0]!.child.pid!);
  progress(`${chats} chats, ${workerCount} workers × ${concurrency} turns at once, model ${modelMs} ms`);

  const started = performance.now();
  for (let c = 0; c < chats; c++) {
    const s: Sent = { chat: `crowd-${c}`, address: randomUUID(), publishedAt: 0, replyIds: new Set() };
    sent.push(s);
    s.unwatch = await bus.watchCliReplies(s.address, (payload) => {
      const parsed = OutboundMessageSchema.safeParse(safeJson(payload));
      if (!parsed.success) return;
      s.replyIds.add(parsed.data.id);
      if (s.answeredAt !== undefined) return;
      s.answeredAt = performance.now();
      answered += 1;
    });
  }
  // Published as fast as the connection takes them, in batches so the client's own queue stays bounded.
  for (let c = 0; c < chats; c += 500) {
    await Promise.all(
      sent.slice(c, c + 500).map((s) => {
        s.publishedAt = performance.now();
        return bus.publishInbound({
          id: `cli:${s.address}`,
          channel: 'cli',
          chatId: s.chat,
          senderId: 'cli',
          content: `hello from ${s.chat}`,
          metadata: { replyAddress: s.address },
        });
      }),
    );
  }
  const waitingAtPublish = chats - answered;
  const memoryAfter = await usedMemory();
  progress(
    `published ${chats} in ${Math.round(performance.now() - started)} ms; ${answered} answered so far`,
  );

  const peak = new Map<number, number>();
  // The kernel keeps the peak RSS (VmHWM), not the peak PSS: sampled twice a second.
  const peakPss = new Map<number, { pss: number; rss: number; fileRss: number }>();
  const sampler = setInterval(() => {
    for (const w of workers) {
      const pid = w.child.pid!;
      try {
        const pss = pssMb(pid);
        if (pss > (peakPss.get(pid)?.pss ?? 0))
          peakPss.set(pid, { pss, rss: procMb(pid, 'VmRSS'), fileRss: procMb(pid, 'RssFile') });
      } catch {
        // the worker exited: its last sample stands
      }
    }
  }, 500);
  const ticker = setInterval(() => {
    progress(`${answered}/${chats} answered, ${Math.round((performance.now() - started) / 1000)} s`);
  }, 10_000);
  try {
    await waitFor(() => answered === chats, Math.max(600_000, chats * 300), 'every chat answered', 200);
  } finally {
    clearInterval(ticker);
    clearInterval(sampler);
  }
  const elapsedS = (performance.now() - started) / 1000;
  for (const w of workers) peak.set(w.child.pid!, procMb(w.child.pid!, 'VmHWM'));
  const workerCpuMs = workers.reduce((sum, w) => sum + cpuMs(w.child.pid!), 0) - workerCpuBefore;
  const gatewayCpuMs = cpuMs(procs[0]!.child.pid!) - gatewayCpuBefore;

  // Exactly once: every address's reply list holds one reply, and the model was asked once per chat.
  let duplicates = 0;
  let lost = 0;
  for (const s of sent) {
    await s.unwatch?.();
    // A list expires 10 minutes after its last reply (REPLY_LIST_TTL_S): in a long run only what was heard counts.
    for (const payload of await bus.readCliReplies(s.address)) {
      const parsed = OutboundMessageSchema.safeParse(safeJson(payload));
      if (parsed.success) s.replyIds.add(parsed.data.id);
    }
    if (s.replyIds.size === 0) lost += 1;
    if (s.replyIds.size > 1) duplicates += s.replyIds.size - 1;
  }
  const latencies = sent.map((s) => (s.answeredAt ?? Number.NaN) - s.publishedAt).sort((a, b) => a - b);
  process.stdout.write(
    `${JSON.stringify(
      {
        chats,
        workers: workers.map((w) => ({
          pid: w.child.pid,
          peakRssMb: peak.get(w.child.pid!),
          peakPssMb: peakPss.get(w.child.pid!)?.pss,
          atPeakPss: peakPss.get(w.child.pid!),
        })),
        workerConcurrency: concurrency,
        workerNodeOptions,
        workerEnv,
        modelMs,
        answered,
        duplicates,
        lost,
        modelCalls: values['fake-in-process'] ? fake.requests.length : 'not counted (see --fake-in-process)',
        // Failed attempts and redone turns, as the workers logged them (each a model call the chat did not see).
        workerLog: Object.fromEntries(
          [
            'did not answer within',
            'cannot reach the model endpoint',
            'job attempt failed; retried',
            'redone turn',
          ].map((text) => [
            text,
            workers.reduce(
              (n, w) => n + w.stderr().split(text).length - 1 + w.stdout().split(text).length - 1,
              0,
            ),
          ]),
        ),
        latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99) },
        seconds: Math.round(elapsedS * 10) / 10,
        turnsPerSecond: Math.round((chats / elapsedS) * 10) / 10,
        cpuMsPerTurn: {
          workers: Math.round((workerCpuMs / chats) * 10) / 10,
          gateway: Math.round((gatewayCpuMs / chats) * 10) / 10,
        },
        idealTurnsPerSecond: Math.round(((workerCount * concurrency) / (modelMs / 1000)) * 10) / 10,
        redis: {
          usedMemoryBeforeBytes: memoryBefore,
          usedMemoryPublishedBytes: memoryAfter,
          waitingAtPublish,
          usedMemoryPerWaitingMessageBytes: Math.round(
            (memoryAfter - memoryBefore) / Math.max(1, waitingAtPublish),
          ),
        },
        loadAverage: os.loadavg().map((l) => Math.round(l * 10) / 10),
      },
      null,
      2,
    )}\n`,
  );
  const errors = procs.flatMap((p) =>
    p
      .stderr()
      .split('\n')
      .filter((l) => /"level":(50|60)/.test(l)),
  );
  if (errors.length > 0) progress(`${errors.length} error lines; first: ${errors[0]?.slice(0, 400)}`);
} finally {
  if (values.logs) {
    mkdirSync(values.logs, { recursive: true });
    for (const [i, p] of procs.entries()) {
      const name = i === 0 ? 'gateway' : `worker-${i}`;
      writeFileSync(path.join(values.logs, `${name}.log`), p.stdout() + p.stderr());
    }
  }
  stats.disconnect();
  await bus.close();
  for (const p of procs) await stop(p);
  await fake.close();
  await redis.stop();
}
process.exit(0);

/**
 * Benchmark of Redis commands per turn. Starts its own redis-server, the fake
 * OpenAI server (an instant model) and a real `startRole('start')` with live
 * replies off (MAGPIE_STREAM=off), then sends N turns one after another
 * through the CLI client (`sendAndWait` on one long-lived client bus, as
 * `magpie chat` does) and prints one JSON object:
 *
 * - `commandsPerTurn`: every command Redis ran during the turns divided by N,
 *   from `INFO commandstats` after `CONFIG RESETSTAT`. That figure counts the
 *   commands run inside Lua scripts too (each EVALSHA once, and each command it
 *   calls once more); `sentPerTurn` and `inScriptsPerTurn` split it, from MONITOR.
 * - `byCommand`: the same per turn, by command (commandstats).
 * - `byScript`: EVAL/EVALSHA calls per turn by script (named from BullMQ's own
 *   script list, or by the first line of magpie's), with the commands each ran.
 * - `bullmqShare` / `magpieShare`: commands per turn (sent + in scripts) that
 *   were BullMQ's scripts and blocking reads, and the rest.
 * - `idleCommandsPerSecond`: what the running role sends with nothing to do.
 * - `bareBullmqPerJob`: the floor BullMQ sets, measured the same way once the role
 *   has stopped: jobs added one at a time to a bare Queue and processed by an
 *   empty processor, per job (commandstats), for BullMQ's own `Worker`
 *   (concurrency 1, `removeOnComplete: true`: its cheapest setting) and for
 *   magpie's `LeanWorker` (concurrency 8, as the consumers run), with the
 *   moveToActive calls per job. A turn carries two jobs unless its reply goes
 *   straight to a waiting CLI client.
 *
 * The bench's own INFO, CONFIG and MONITOR are left out. Connection set-up is
 * not part of a turn (the client bus is connected once, before the warm-up).
 *
 *   npx tsx bench/commands-per-turn.ts [--turns 50] [--max 40]
 *
 * `--max` makes the bench exit 1 when the total per turn is above it (the
 * issue's goal is 40); the default only prints.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Queue, Worker } from 'bullmq';
import * as bullScripts from 'bullmq/dist/esm/scripts/index.js';
import { Redis } from 'ioredis';
import { parseConfig } from '../src/app/config.js';
import { startRole } from '../src/app/roles.js';
import { Bus } from '../src/bus/bus.js';
import { LeanWorker } from '../src/bus/lean-worker.js';
import { sendAndWait } from '../src/channels/cli/client.js';
import { silentLogger } from '../src/log/index.js';
import { startFakeOpenAI } from '../test/fakes/openai-server.js';
import { startRedis } from '../test/fakes/redis-server.js';

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '50' },
    warmup: { type: 'string', default: '5' },
    max: { type: 'string' },
    trace: { type: 'boolean', default: false },
  },
});
const turns = Number(values.turns);
const warmup = Number(values.warmup);
if (!Number.isInteger(turns) || turns < 1) throw new RangeError('--turns must be a positive whole number');

/** The bench's own commands, never counted. */
const OWN = new Set(['info', 'config', 'monitor', 'echo', 'client']);
const MARK_START = `bench-start-${randomUUID()}`;
const MARK_END = `bench-end-${randomUUID()}`;

/** MONITOR prints arguments escaped (sdscatrepr); this undoes it, so an EVAL's body hashes to its SHA. */
function unescapeMonitor(text: string): string {
  const map: Record<string, string> = { n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b', '"': '"', '\\': '\\' };
  return text.replace(/\\(x[0-9a-fA-F]{2}|.)/g, (_, c: string) =>
    c.length === 3 ? String.fromCharCode(Number.parseInt(c.slice(1), 16)) : (map[c] ?? c),
  );
}
const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
/** BullMQ's scripts by SHA, so EVALSHA lines can be named. */
const bullmq = new Map<string, string>();
for (const s of Object.values(bullScripts) as Array<{ name?: string; content?: string }>)
  if (s?.name && s.content) bullmq.set(sha1(s.content), s.name);

function firstLine(lua: string): string {
  const line = lua
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l && l !== '--[[');
  return `magpie: ${(line ?? '?').replace(/^--\s*/, '').slice(0, 60)}`;
}

interface Line {
  source: string;
  args: string[];
}

/** The script an EVAL or EVALSHA line runs (BullMQ's by name), or undefined. */
function scriptOf(line: Line): string | undefined {
  const name = line.args[0]?.toLowerCase();
  if (name === 'evalsha') return scriptNames.get(line.args[1] ?? '');
  if (name === 'eval') return scriptNames.get(sha1(unescapeMonitor(line.args[1] ?? '')));
  return undefined;
}

/** commandstats as calls by command name. */
async function commandStats(redis: Redis): Promise<Map<string, number>> {
  const text = await redis.info('commandstats');
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

const perTurn = (n: number) => Math.round((n / turns) * 10) / 10;
const sorted = (m: Map<string, number>) =>
  Object.fromEntries([...m].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, perTurn(v)]));

const redis = await startRedis();
const fake = await startFakeOpenAI({ responder: () => ({ content: 'ok' }) });
process.env.XDG_STATE_HOME = mkdtempSync(path.join(os.tmpdir(), 'magpie-bench-state-'));
const workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-bench-ws-'));
const config = parseConfig({
  REDIS_URL: redis.url,
  MAGPIE_QUEUE_PREFIX: `bench-cmd-${randomUUID()}`,
  MAGPIE_WORKSPACE: workspace,
  OPENAI_API_KEY: 'bench-key',
  OPENAI_BASE_URL: fake.baseURL,
  MAGPIE_MODEL: 'fake-model',
  MAGPIE_HEARTBEAT_INTERVAL: '0',
  MAGPIE_STREAM: 'off',
});
const logger = silentLogger();
const role = await startRole({ role: 'start', config, logger });
const client = await Bus.connect({ config, logger });
const admin = new Redis(redis.url);
const monitor = await admin.duplicate().monitor();
const lines: Line[] = [];
let recording = false;
monitor.on('monitor', (_time: string, args: string[], source: string) => {
  if (args[0]?.toLowerCase() === 'echo' && args[1] === MARK_START) recording = true;
  else if (args[0]?.toLowerCase() === 'echo' && args[1] === MARK_END) recording = false;
  else if (recording) lines.push({ source, args });
  // Script bodies seen as EVAL (the first call of each, or every call of a plain eval) name their SHA.
  if (args[0]?.toLowerCase() === 'eval' && args[1] && !bullmq.has(sha1(unescapeMonitor(args[1]))))
    scriptNames.set(sha1(unescapeMonitor(args[1])), firstLine(unescapeMonitor(args[1])));
});
const scriptNames = new Map<string, string>(bullmq);

/** Waits until Redis has run no command but idle ones for `quietMs` (the turn's tail is done). */
async function settle(quietMs: number): Promise<void> {
  let seen = lines.length;
  for (;;) {
    await new Promise((r) => setTimeout(r, quietMs));
    if (lines.length === seen) return;
    seen = lines.length;
  }
}

/**
 * The floor: `jobs` jobs added one at a time (each awaited to completion) on a bare queue, with
 * the role stopped; commands per job from commandstats, moveToActive calls from MONITOR.
 */
async function bareFloor(kind: 'bullmq' | 'lean', jobs: number) {
  const prefix = `bench-bare-${randomUUID()}`;
  const producer = new Redis(redis.url);
  const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
  const queue = new Queue('bare', { connection: producer, prefix });
  const done = new Set<string>();
  let notify: () => void = () => {};
  const processor = async (job: { id?: string }) => {
    done.add(job.id ?? '');
    notify();
  };
  const worker =
    kind === 'bullmq'
      ? new Worker('bare', processor, { connection, prefix, concurrency: 1 })
      : new LeanWorker('bare', processor, { connection, prefix, concurrency: 8 });
  await worker.waitUntilReady();
  await queue.waitUntilReady();
  await settle(300);
  lines.length = 0;
  await admin.config('RESETSTAT');
  await admin.echo(MARK_START);
  for (let i = 0; i < jobs; i++) {
    const id = `j${i}`;
    const finished = new Promise<void>((resolve) => {
      notify = () => {
        if (done.has(id)) resolve();
      };
    });
    await queue.add('job', {}, { jobId: id, removeOnComplete: true });
    await finished;
    // Each job alone: the worker is back in its blocking read before the next is added.
    await settle(50);
  }
  await settle(300);
  await admin.echo(MARK_END);
  const stats = await commandStats(admin);
  for (const own of OWN) stats.delete(own);
  const total = [...stats.values()].reduce((a, b) => a + b, 0);
  const takes = lines.filter((l) => l.source !== 'lua' && scriptOf(l) === 'moveToActive');
  await worker.close();
  await queue.close();
  producer.disconnect();
  const per = (n: number) => Math.round((n / jobs) * 10) / 10;
  return {
    worker: kind === 'bullmq' ? "BullMQ's Worker, concurrency 1" : "magpie's LeanWorker, concurrency 8",
    commandsPerJob: per(total),
    moveToActivePerJob: per(takes.length),
    byCommand: Object.fromEntries([...stats].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, per(v)])),
  };
}

let exitCode = 0;
let stopped = false;
try {
  for (let i = 0; i < warmup; i++) await sendAndWait(client, { content: 'hi', chatId: `warm-${i}` });
  await new Promise((r) => setTimeout(r, 1000));

  // The idle rate: the role and the client, nothing to do, for 3 s.
  await admin.echo(MARK_START);
  const idleStart = performance.now();
  await new Promise((r) => setTimeout(r, 3000));
  await admin.echo(MARK_END);
  const idleSeconds = (performance.now() - idleStart) / 1000;
  const idleCommandsPerSecond = Math.round((lines.length / idleSeconds) * 10) / 10;
  const idleByCommand = new Map<string, number>();
  for (const l of lines)
    idleByCommand.set(l.args[0]!.toLowerCase(), (idleByCommand.get(l.args[0]!.toLowerCase()) ?? 0) + 1);
  lines.length = 0;

  await admin.config('RESETSTAT');
  await admin.echo(MARK_START);
  const t = performance.now();
  for (let i = 0; i < turns; i++) {
    const reply = await sendAndWait(client, { content: 'hi', chatId: `chat-${i % 10}` });
    if (reply.kind !== 'reply') throw new Error(`turn ${i} ended ${reply.kind}: ${reply.content}`);
  }
  const turnsMs = performance.now() - t;
  await settle(300);
  await admin.echo(MARK_END);
  const windowSeconds = (performance.now() - t) / 1000;
  const stats = await commandStats(admin);
  for (const own of OWN) stats.delete(own);
  const total = [...stats.values()].reduce((a, b) => a + b, 0);

  // MONITOR: sent vs in scripts, by script, BullMQ vs magpie.
  const byScript = new Map<string, { calls: number; inside: number }>();
  let sent = 0;
  let inScripts = 0;
  let bull = 0;
  let current: { calls: number; inside: number } | undefined;
  let currentIsBull = false;
  for (const l of lines) {
    const name = l.args[0]!.toLowerCase();
    if (l.source === 'lua') {
      inScripts++;
      if (current) current.inside++;
      if (currentIsBull) bull++;
      continue;
    }
    sent++;
    current = undefined;
    currentIsBull = false;
    if (name === 'evalsha' || name === 'eval') {
      const sha = name === 'eval' ? sha1(unescapeMonitor(l.args[1]!)) : l.args[1]!;
      const script = scriptNames.get(sha) ?? `unknown ${sha.slice(0, 8)}`;
      currentIsBull = bullmq.has(sha);
      const label = `${name} ${currentIsBull ? `bullmq: ${script}` : script}`;
      current = byScript.get(label) ?? { calls: 0, inside: 0 };
      current.calls++;
      byScript.set(label, current);
      if (currentIsBull) bull++;
    } else if (name === 'bzpopmin' || name === 'xread') {
      bull++; // BullMQ's blocking reads (the worker's marker, QueueEvents' stream).
    }
  }
  // --trace: the last turn's commands, as MONITOR saw them, on stderr.
  if (values.trace)
    for (const l of lines.slice(-Math.ceil(lines.length / turns)))
      process.stderr.write(`${l.source.padEnd(22)} ${l.args.map((a) => a.slice(0, 60)).join(' ')}\n`);
  const scripts = Object.fromEntries(
    [...byScript]
      .sort((a, b) => b[1].calls + b[1].inside - (a[1].calls + a[1].inside))
      .map(([k, v]) => [k, { calls: perTurn(v.calls), commandsInside: perTurn(v.inside) }]),
  );
  const figures = {
    // The same bench on the code before the lean turn (commit e003021), in the same session on this machine.
    before: {
      commandsPerTurn: 219.5,
      sentPerTurn: 72.1,
      inScriptsPerTurn: 147.4,
      bullmqShare: 130.5,
      magpieShare: 89,
    },
    turns,
    msPerTurn: Math.round((turnsMs / turns) * 10) / 10,
    commandsPerTurn: perTurn(total),
    counted: 'INFO commandstats: every command Redis ran, those called by Lua scripts included',
    sentPerTurn: perTurn(sent),
    inScriptsPerTurn: perTurn(inScripts),
    bullmqShare: perTurn(bull),
    magpieShare: perTurn(sent + inScripts - bull),
    idleCommandsPerSecond,
    idleInWindowPerTurn: perTurn(idleCommandsPerSecond * windowSeconds),
    idleByCommand: Object.fromEntries(idleByCommand),
    byCommand: sorted(stats),
    byScript: scripts,
  };
  // The floor, with the role and the client gone so that only the bare queue runs.
  await client.close();
  await role.stop();
  stopped = true;
  const bareBullmqPerJob = [await bareFloor('bullmq', turns), await bareFloor('lean', turns)];
  process.stdout.write(`${JSON.stringify({ ...figures, bareBullmqPerJob }, null, 2)}\n`);
  if (values.max !== undefined && figures.commandsPerTurn > Number(values.max)) {
    process.stderr.write(`bench: ${figures.commandsPerTurn} commands per turn, above --max ${values.max}\n`);
    exitCode = 1;
  }
} finally {
  monitor.disconnect();
  admin.disconnect();
  if (!stopped) {
    await client.close();
    await role.stop();
  }
  await fake.close();
  await redis.stop();
  rmSync(workspace, { recursive: true, force: true });
}
process.exit(exitCode);

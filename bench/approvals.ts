/**
 * Benchmark: a question waiting for a person holds no worker. Starts its own
 * redis-server, the fake OpenAI server and the role `magpie start` runs
 * (in-process, `--concurrency` worker slots), parks N turns on approval
 * questions (each asks to run a command), then measures how fast a new chat
 * is answered, against the same measure with nothing waiting. Prints one
 * JSON object:
 *
 * - `parkMs`: send → question shown, per parked turn (p50/p99);
 * - `answerMs.idle` / `answerMs.withWaiting`: a new chat's send → reply (p50/p99);
 * - `waiting`: questions stored when the second measure ran.
 *
 * Target: `withWaiting.p50` within 2× of `idle.p50` (a waiting turn takes no slot).
 *
 *   npx tsx bench/approvals.ts [--waiting 100] [--samples 30] [--concurrency 4]
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseConfig } from '../src/app/config.js';
import { startRole } from '../src/app/roles.js';
import { Bus } from '../src/bus/bus.js';
import { sendAndWait } from '../src/channels/cli/client.js';
import { silentLogger } from '../src/log/index.js';
import { type RecordedRequest, startFakeOpenAI } from '../test/fakes/openai-server.js';
import { startRedis } from '../test/fakes/redis-server.js';

const { values } = parseArgs({
  options: {
    waiting: { type: 'string', default: '100' },
    samples: { type: 'string', default: '30' },
    concurrency: { type: 'string', default: '4' },
  },
});
const waiting = Number(values.waiting);
const samples = Number(values.samples);
const concurrency = Number(values.concurrency);

function summary(xs: number[]) {
  const sorted = [...xs].sort((a, b) => a - b);
  const at = (p: number) =>
    Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]! * 10) / 10;
  return { p50: at(0.5), p99: at(0.99), n: xs.length };
}

/** exec for `run:` messages (a risky command: the turn parks), a plain answer otherwise. */
function responder(req: RecordedRequest) {
  const last = (req.body.messages as Array<{ role: string; content: unknown }>).at(-1);
  const text = typeof last?.content === 'string' ? last.content : '';
  const run = /run: (.+)$/m.exec(text)?.[1];
  if (run && last?.role === 'user')
    return { toolCalls: [{ name: 'exec', arguments: JSON.stringify({ command: run }) }] };
  return { content: 'hello back' };
}

const redis = await startRedis();
const openai = await startFakeOpenAI({ responder });
const workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-bench-approvals-'));
const config = parseConfig({
  REDIS_URL: redis.url,
  MAGPIE_QUEUE_PREFIX: `bench-${randomUUID()}`,
  MAGPIE_WORKSPACE: workspace,
  OPENAI_API_KEY: 'bench-key',
  OPENAI_BASE_URL: openai.baseURL,
  MAGPIE_MODEL: 'fake-model',
  MAGPIE_HEARTBEAT_INTERVAL: '0',
  MAGPIE_APPROVAL: 'risky',
  MAGPIE_STREAM: 'off',
});
const role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency });
const bus = await Bus.connect({ config, logger: silentLogger() });

async function answered(chatId: string): Promise<number> {
  const started = performance.now();
  await sendAndWait(bus, { content: 'hello', chatId, timeoutMs: 30_000 });
  return performance.now() - started;
}

try {
  const idle: number[] = [];
  for (let i = 0; i < samples; i++) idle.push(await answered(`idle-${i}`));
  const park: number[] = [];
  await Promise.all(
    Array.from({ length: waiting }, async (_, i) => {
      const started = performance.now();
      const reply = await sendAndWait(bus, {
        content: `run: echo ${i} >> waiting.txt`,
        chatId: `wait-${i}`,
        timeoutMs: 60_000,
      });
      if (!reply.content.includes('magpie wants to run')) throw new Error(`no question: ${reply.content}`);
      park.push(performance.now() - started);
    }),
  );
  const stored = (await bus.approvals.list()).filter((p) => p.state === 'waiting').length;
  const withWaiting: number[] = [];
  for (let i = 0; i < samples; i++) withWaiting.push(await answered(`fresh-${i}`));
  process.stdout.write(
    `${JSON.stringify(
      {
        workerSlots: concurrency,
        waiting: stored,
        parkMs: summary(park),
        answerMs: { idle: summary(idle), withWaiting: summary(withWaiting) },
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await bus.close();
  await role.stop();
  await openai.close();
  await redis.stop();
  rmSync(workspace, { recursive: true, force: true });
}

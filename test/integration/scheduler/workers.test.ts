/**
 * The scheduler through real `magpie worker` processes (dist build), the real
 * agent and the fake OpenAI server: heartbeat ticks shared by three workers,
 * and a reminder that survives a killed worker.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCronTool } from '../../../src/tools/cron.js';
import { type FakeOpenAI, type RecordedRequest, startFakeOpenAI } from '../../fakes/openai-server.js';
import { fixtureProcessEnv, outboundJobs, schedulerFixturePerTest, toolContext, waitFor } from './helpers.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const BIN = path.join(ROOT, 'dist/cli/bin.js');

interface Proc {
  child: ChildProcess;
  lines: Array<Record<string, unknown>>;
  exited: Promise<number | null>;
}

const isHeartbeat = (req: RecordedRequest) =>
  JSON.stringify(req.body?.messages ?? []).includes('[heartbeat]');

describe('scheduler in real worker processes (real Redis, fake OpenAI)', () => {
  let openai: FakeOpenAI;
  const procs: Proc[] = [];

  beforeAll(async () => {
    await promisify(execFile)('npm', ['run', 'build', '--silent'], { cwd: ROOT });
    openai = await startFakeOpenAI({ responder: () => ({ content: 'HEARTBEAT_OK' }) });
  }, 180_000);
  afterAll(async () => {
    await openai?.close();
  });
  const fx = schedulerFixturePerTest();
  beforeEach(() => {
    openai.requests.length = 0;
  });
  afterEach(async () => {
    for (const p of procs.splice(0)) {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await p.exited;
    }
  });

  function spawnWorker(env: Record<string, string> = {}): Proc {
    const child = spawn(
      process.execPath,
      [BIN, 'worker', '--stalled-interval', '1s', '--lock-duration', '2s'],
      {
        cwd: fx.workspace,
        env: fixtureProcessEnv(fx, {
          MAGPIE_TIMEZONE: 'UTC',
          MAGPIE_HEARTBEAT_INTERVAL: '0',
          OPENAI_BASE_URL: openai.baseURL,
          OPENAI_API_KEY: 'test-key',
          LOG_LEVEL: 'info',
          NODE_ENV: 'production',
          ...env,
        }),
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    const lines: Array<Record<string, unknown>> = [];
    let buffer = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line.startsWith('{')) lines.push(JSON.parse(line));
        else if (line) lines.push({ msg: line });
      }
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const proc = { child, lines, exited };
    procs.push(proc);
    return proc;
  }
  const ready = (p: Proc) =>
    waitFor(
      () => {
        if (p.child.exitCode !== null) throw new Error(`worker exited: ${JSON.stringify(p.lines)}`);
        return p.lines.some((l) => l.msg === 'magpie is running');
      },
      30_000,
      'the worker to start',
    );
  const doneTicks = (p: Proc) =>
    p.lines.filter((l) => String(l.msg).startsWith('heartbeat done')).map((l) => String(l.job));

  it('runs one heartbeat turn per tick with three workers (1 s interval, ~5 s)', async () => {
    await writeFile(path.join(fx.workspace, 'HEARTBEAT.md'), '# Tasks\n- check the disk\n');
    const workers = [1, 2, 3].map(() => spawnWorker({ MAGPIE_HEARTBEAT_INTERVAL: '1s' }));
    await Promise.all(workers.map(ready));
    const startedAt = Date.now();
    await waitFor(
      () => Date.now() - startedAt >= 5_000 && workers.flatMap(doneTicks).length >= 5,
      30_000,
      'ticks',
    );
    for (const w of workers) w.child.kill('SIGTERM');
    expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0, 0]);

    const ticks = workers.flatMap(doneTicks);
    const turns = openai.requests.filter(isHeartbeat).length;
    expect(new Set(ticks).size).toBe(ticks.length); // no tick ran twice
    expect(turns).toBe(ticks.length); // one model turn per tick
    const millis = ticks.map((id) => Number(id.split(':').pop())).sort((a, b) => a - b);
    const gaps = millis.slice(1).map((m, i) => m - millis[i]!);
    expect(
      gaps.every((g) => g === 1_000 || g === 2_000),
      `gaps ${gaps}`,
    ).toBe(true);
    expect(gaps.filter((g) => g === 2_000).length).toBeLessThanOrEqual(1); // none missed beyond one
    // Which worker takes a tick is BullMQ's choice: on a loaded machine one may take them all.
  }, 90_000);

  it('delivers a reminder once although its worker was killed and restarted before it was due', async () => {
    const first = spawnWorker();
    await ready(first);
    const tool = createCronTool({ store: fx.store, config: fx.config });
    const ctx = toolContext('telegram', 'ana', fx.workspace);
    const added = await tool.execute({ action: 'add', message: 'call Ana', in_seconds: 4 }, ctx);
    expect(added.isError).toBeUndefined();
    first.child.kill('SIGKILL');
    await first.exited;
    expect(await outboundJobs(fx.bus, 'telegram')).toHaveLength(0);

    const second = spawnWorker();
    await ready(second);
    const [job] = await waitFor(
      async () => {
        const jobs = await outboundJobs(fx.bus, 'telegram');
        return jobs.length > 0 ? jobs : undefined;
      },
      20_000,
      'the reminder',
    );
    expect(job!.data).toMatchObject({ chatId: 'ana', content: '⏰ call Ana' });
    await waitFor(async () =>
      (await tool.execute({ action: 'list' }, ctx)).forLLM.startsWith('No scheduled'),
    );
    expect(await outboundJobs(fx.bus, 'telegram')).toHaveLength(1);
  }, 90_000);
});

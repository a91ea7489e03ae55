import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import type { Bus } from '../../../src/bus/bus.js';
import type { Config } from '../../../src/config/index.js';
import { createCronTool } from '../../../src/tools/cron.js';
import { connectBus, outboundJobs, tempWorkspace, testConfig, toolContext, waitFor } from './helpers.js';

const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'scheduler-process.ts');

interface Proc {
  child: ChildProcess;
  lines: Array<Record<string, unknown>>;
  exited: Promise<number | null>;
}

describe('scheduler across worker processes (real Redis)', () => {
  let workspace: string;
  let prefix: string;
  let config: Config;
  let bus: Bus;
  const procs: Proc[] = [];

  beforeEach(async () => {
    workspace = await tempWorkspace();
    prefix = `test-${randomUUID()}`;
    config = testConfig(inject('redisUrl'), prefix, workspace);
    bus = await connectBus(config);
  });
  afterEach(async () => {
    for (const p of procs.splice(0)) {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await p.exited;
    }
    await bus.close();
    await rm(workspace, { recursive: true, force: true });
  });

  function spawnWorker(env: Record<string, string> = {}): Proc {
    const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
      env: {
        ...process.env,
        REDIS_URL: inject('redisUrl'),
        MAGPIE_QUEUE_PREFIX: prefix,
        MAGPIE_WORKSPACE: workspace,
        MAGPIE_TIMEZONE: 'UTC',
        MAGPIE_HEARTBEAT_INTERVAL: '0',
        LOG_LEVEL: 'info',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const lines: Array<Record<string, unknown>> = [];
    let buffer = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let nl = buffer.indexOf('\n');
      while (nl >= 0) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line.startsWith('{')) lines.push(JSON.parse(line));
        nl = buffer.indexOf('\n');
      }
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const proc = { child, lines, exited };
    procs.push(proc);
    return proc;
  }
  const ready = (p: Proc) =>
    waitFor(() => p.lines.some((l) => l.ready === true), 20_000, 'the worker process to start');

  it('fires one heartbeat turn per tick with three worker processes (1 s interval, ~5 s)', async () => {
    await writeFile(path.join(workspace, 'HEARTBEAT.md'), '# Tasks\n- check the disk\n');
    const workers = [1, 2, 3].map(() => spawnWorker({ MAGPIE_HEARTBEAT_INTERVAL: '1s' }));
    await Promise.all(workers.map(ready));
    const counter = `${prefix}:test:heartbeat-turns`;
    await waitFor(async () => Number(await bus.redis.get(counter)) >= 6, 20_000, 'six heartbeat turns');
    for (const w of workers) w.child.kill('SIGTERM');
    expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0, 0]);

    const done = workers.flatMap((w) =>
      w.lines.filter((l) => String(l.msg).startsWith('heartbeat done')).map((l) => String(l.job)),
    );
    const turns = Number(await bus.redis.get(counter));
    // Every turn belongs to a distinct tick: no tick ran twice.
    expect(new Set(done).size).toBe(done.length);
    expect(done.length).toBe(turns);
    // Ticks are consecutive seconds (none missed beyond one).
    const millis = done.map((id) => Number(id.split(':').pop())).sort((a, b) => a - b);
    const gaps = millis.slice(1).map((m, i) => m - millis[i]!);
    expect(gaps.every((g) => g === 1_000 || g === 2_000)).toBe(true);
    expect(gaps.filter((g) => g === 2_000).length).toBeLessThanOrEqual(1);
    // More than one process took part (the ticks are shared, not pinned to one worker).
    expect(
      workers.filter((w) => w.lines.some((l) => String(l.msg).startsWith('heartbeat done'))).length,
    ).toBeGreaterThan(1);
  }, 60_000);

  it('delivers a reminder once although its worker was killed and restarted before it was due', async () => {
    const first = spawnWorker();
    await ready(first);
    const tool = createCronTool({ bus, config });
    const ctx = toolContext('telegram', 'ana', workspace);
    const added = await tool.execute({ action: 'add', message: 'call Ana', in_seconds: 4 }, ctx);
    expect(added.isError).toBeUndefined();
    first.child.kill('SIGKILL');
    await first.exited;
    expect(await outboundJobs(bus, 'telegram')).toHaveLength(0);

    const second = spawnWorker();
    await ready(second);
    const [job] = await waitFor(
      async () => {
        const jobs = await outboundJobs(bus, 'telegram');
        return jobs.length > 0 ? jobs : undefined;
      },
      20_000,
      'the reminder',
    );
    expect(job!.data).toMatchObject({ chatId: 'ana', content: '⏰ call Ana' });
    await waitFor(async () =>
      (await tool.execute({ action: 'list' }, ctx)).forLLM.startsWith('No scheduled'),
    );
    expect(await outboundJobs(bus, 'telegram')).toHaveLength(1);
  }, 60_000);
});

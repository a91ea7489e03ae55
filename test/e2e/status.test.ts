/**
 * `magpie status --json` against a running daemon (`magpie start` on real
 * Redis, fake OpenAI with a slow reply): the report's shape and its figures
 * while a slow turn runs, and after it ends; the human form too.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { StatusReport } from '../../src/ops/status.js';
import { stopProcsThenFake } from '../fakes/daemon.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { build, daemonEnv, magpie, type Proc, tempWorkspace } from './daemon-helpers.js';

describe('magpie status', () => {
  let fake: FakeOpenAI;
  let env: NodeJS.ProcessEnv;
  let daemon: Proc | undefined;

  beforeAll(async () => {
    build();
    fake = await startFakeOpenAI({
      responder: (req) => {
        const last = JSON.stringify(req.body.messages.at(-1));
        return last.includes('slow')
          ? { content: 'slow answer', delayMs: 3_000 }
          : { content: 'quick answer' };
      },
    });
    env = daemonEnv({
      REDIS_URL: inject('redisUrl'),
      OPENAI_BASE_URL: fake.baseURL,
      MAGPIE_WORKSPACE: tempWorkspace(),
      MAGPIE_HEARTBEAT_INTERVAL: '30m',
      MAGPIE_WORKER_CONCURRENCY: '3',
    });
    daemon = magpie(['start'], env);
    await daemon.waitFor(/magpie is running/, 20_000);
  }, 120_000);

  afterAll(() => stopProcsThenFake([daemon], fake));

  async function status(): Promise<StatusReport> {
    const proc = magpie(['status', '--json'], env);
    expect(await proc.exited).toBe(0);
    return JSON.parse(proc.stdout()) as StatusReport;
  }

  it('shows the worker, the running turn with its iteration, queues and the heartbeat; then the turn gone', async () => {
    const send = magpie(['send', '-m', 'a slow one please', '--chat', 'status-e2e', '--timeout', '20s'], env);
    await fake.waitForRequests(1, 10_000);
    const started = Date.now();
    const report = await status();
    expect(Date.now() - started).toBeLessThan(3_000); // a whole subprocess, Node start-up included
    expect(report.tookMs).toBeLessThan(1_000);
    expect(report.redis.url).toMatch(/^redis:\/\/127\.0\.0\.1:\d+/);
    expect(report.redis.version).toMatch(/^\d+\.\d+/);
    expect(report.workers).toHaveLength(1);
    expect(report.workers[0]?.concurrency).toBe(3);
    expect(report.running).toHaveLength(1);
    expect(report.running[0]).toMatchObject({ session: 'cli:status-e2e', iteration: 1 });
    expect(report.running[0]?.worker).toBe(report.workers[0]?.id);
    const inbound = report.queues.find((q) => q.name === 'inbound');
    expect(inbound).toMatchObject({ active: 1, failed: 0 });
    for (const q of report.queues)
      expect(Object.keys(q).sort()).toEqual(['active', 'delayed', 'failed', 'name', 'waiting']);
    expect(report.schedules.heartbeat?.everyMs).toBe(30 * 60_000);
    expect(Date.parse(report.schedules.heartbeat?.next ?? '')).toBeGreaterThan(Date.now());
    expect(report.schedules.tasks).toEqual([]);
    expect(report.helpers).toEqual([]);

    expect(await send.exited).toBe(0);
    expect(send.stdout().trim()).toBe('slow answer');
    const after = await status();
    expect(after.running).toEqual([]);
    expect(after.sessions).toBeGreaterThanOrEqual(1);
    expect(after.queues.find((q) => q.name === 'outbound-cli')).toBeDefined();
  }, 40_000);

  it('prints the same facts for people', async () => {
    const proc = magpie(['status'], env);
    expect(await proc.exited).toBe(0);
    const out = proc.stdout();
    expect(out).toMatch(/^Redis +redis:\/\/127\.0\.0\.1:\d+\/? \(version \d/m);
    expect(out).toMatch(/^Workers +1 alive, 3 turn slots/m);
    expect(out).toMatch(/^ {2}inbound +\d+ +\d+ +\d+ +\d+$/m);
    expect(out).toMatch(/^Heartbeat +next \d{4}-.* \(every 30m\)/m);
    expect(out).toMatch(/^Sessions +\d+/m);
  }, 20_000);
});

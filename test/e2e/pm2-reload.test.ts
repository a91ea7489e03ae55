/**
 * A rolling deploy under the real PM2 (private PM2_HOME): ecosystem.config.js
 * brings up the gateway and two workers (both seen alive), then
 * `pm2 reload magpie-worker` runs while a slow turn is in flight. The turn
 * finishes in the old worker, its reply arrives once, the model was asked
 * once, and two fresh workers answer afterwards. `pm2 kill` at the end.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StatusReport } from '../../src/ops/status.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { killPm2, PM2, pm2Env } from '../fakes/pm2.js';
import { waitFor } from '../fakes/wait-for.js';
import { build, magpie, ROOT } from './daemon-helpers.js';

const run = promisify(execFile);

describe('PM2 reload', () => {
  let fake: FakeOpenAI;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    build();
    fake = await startFakeOpenAI({
      responder: (req) =>
        JSON.stringify(req.body.messages.at(-1)).includes('slow')
          ? { content: 'slow reply', delayMs: 4_000 }
          : { content: 'quick reply' },
    });
    env = pm2Env(fake.baseURL, 'magpie-pm2-reload-');
  }, 120_000);

  afterAll(async () => {
    await killPm2(env);
    await fake?.close();
  });

  async function workers(): Promise<string[]> {
    const proc = magpie(['status', '--json'], env);
    if ((await proc.exited) !== 0) return [];
    return (JSON.parse(proc.stdout()) as StatusReport).workers.map((w) => w.id);
  }

  /** Polls `magpie status` until `check` holds (bounded); a time-out says what pm2 shows. */
  async function waitForWorkers(check: (ids: string[]) => boolean, timeoutMs = 20_000): Promise<string[]> {
    let ids: string[] = [];
    try {
      return await waitFor(
        async () => {
          ids = await workers();
          return check(ids) && ids;
        },
        timeoutMs,
        'the workers',
        250,
      );
    } catch (err) {
      const { stdout } = await run(PM2, ['jlist'], { env, cwd: ROOT });
      const procs = (
        JSON.parse(stdout) as Array<{
          name: string;
          pid: number;
          pm2_env: { status: string; restart_time: number };
        }>
      ).map((p) => `${p.name} pid ${p.pid} ${p.pm2_env.status} restarts ${p.pm2_env.restart_time}`);
      throw new Error(`workers never matched; last seen ${JSON.stringify(ids)}; pm2: ${procs.join('; ')}`, {
        cause: err,
      });
    }
  }

  async function send(text: string, chat: string): Promise<string> {
    const proc = magpie(['send', '-m', text, '--chat', chat, '--timeout', '40s'], env);
    expect(await proc.exited).toBe(0);
    return proc.stdout();
  }

  it('reloads the workers with a turn in flight and loses nothing', async () => {
    await run(PM2, ['start', 'ecosystem.config.js'], { env, cwd: ROOT });
    const before = await waitForWorkers((ids) => ids.length === 2);
    expect(await send('hello before', 'pm2-a')).toBe('quick reply\n');

    const slow = magpie(['send', '-m', 'a slow question', '--chat', 'pm2-slow', '--timeout', '40s'], env);
    const slowAsked = () =>
      fake.requests.filter((r) => JSON.stringify(r.body.messages.at(-1)).includes('slow'));
    await fake.waitForRequests(fake.requests.length + 1, 10_000);
    expect(slowAsked()).toHaveLength(1);

    await run(PM2, ['reload', 'magpie-worker'], { env, cwd: ROOT, timeout: 45_000 });
    expect(await slow.exited).toBe(0);
    expect(slow.stdout()).toBe('slow reply\n'); // exactly once
    expect(slowAsked()).toHaveLength(1); // the turn was not redone

    // An old worker's liveness key is deleted on a clean exit, and expires within 15 s otherwise.
    const after = await waitForWorkers(
      (ids) => ids.length === 2 && ids.every((id) => !before.includes(id)),
      35_000,
    );
    expect(after).toHaveLength(2);
    const replies = await Promise.all(['b', 'c', 'd'].map((c) => send(`hello after ${c}`, `pm2-${c}`)));
    expect(replies).toEqual(['quick reply\n', 'quick reply\n', 'quick reply\n']);
    const { stdout } = await run(PM2, ['jlist'], { env, cwd: ROOT });
    const list = JSON.parse(stdout) as Array<{ name: string; pm2_env: { status: string } }>;
    expect(list.filter((p) => p.name === 'magpie-worker' && p.pm2_env.status === 'online')).toHaveLength(2);
  }, 100_000);
});

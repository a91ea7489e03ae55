/**
 * ecosystem.config.js under the real PM2 (private PM2_HOME): the gateway and
 * two workers come up, `magpie send` is answered, then `pm2 kill`.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { build, daemonEnv, magpie, ROOT, tempWorkspace } from './daemon-helpers.js';

const run = promisify(execFile);
const PM2 = path.join(ROOT, 'node_modules', '.bin', 'pm2');

describe('PM2 ecosystem', () => {
  let fake: FakeOpenAI;
  let pm2Home: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    build();
    fake = await startFakeOpenAI({ responder: () => ({ content: 'answered under pm2' }) });
    pm2Home = mkdtempSync(path.join(os.tmpdir(), 'magpie-pm2-'));
    env = {
      ...daemonEnv({
        REDIS_URL: inject('redisUrl'),
        OPENAI_BASE_URL: fake.baseURL,
        MAGPIE_WORKSPACE: tempWorkspace(),
        MAGPIE_WORKERS: '2',
      }),
      PM2_HOME: pm2Home,
    };
  }, 120_000);

  afterAll(async () => {
    await run(PM2, ['kill'], { env, cwd: ROOT }).catch(() => undefined);
    rmSync(pm2Home, { recursive: true, force: true });
    await fake?.close();
  });

  it('starts gateway ×1 and worker ×2, and the daemon answers send', async () => {
    await run(PM2, ['start', 'ecosystem.config.js'], { env, cwd: ROOT });
    const { stdout } = await run(PM2, ['jlist'], { env, cwd: ROOT });
    const list = JSON.parse(stdout) as Array<{ name: string; pm2_env: { status: string } }>;
    expect(list.filter((p) => p.name === 'magpie-gateway')).toHaveLength(1);
    expect(list.filter((p) => p.name === 'magpie-worker')).toHaveLength(2);

    const send = magpie(['send', '-m', 'hello pm2', '--timeout', '30s'], env);
    expect(await send.exited).toBe(0);
    expect(send.stdout().trim()).toBe('answered under pm2');
    const after = JSON.parse((await run(PM2, ['jlist'], { env, cwd: ROOT })).stdout) as typeof list;
    expect(after.every((p) => p.pm2_env.status === 'online')).toBe(true);
  }, 60_000);
});

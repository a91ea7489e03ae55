/**
 * ecosystem.config.js under the real PM2 (private PM2_HOME): the gateway and
 * two workers come up, `magpie send` is answered, then `pm2 kill`.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { killPm2, PM2, pm2Env } from '../fakes/pm2.js';
import { build, magpie, ROOT } from './daemon-helpers.js';

const run = promisify(execFile);

describe('PM2 ecosystem', () => {
  let fake: FakeOpenAI;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    build();
    fake = await startFakeOpenAI({ responder: () => ({ content: 'answered under pm2' }) });
    env = pm2Env(fake.baseURL, 'magpie-pm2-');
  }, 120_000);

  afterAll(async () => {
    await killPm2(env);
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

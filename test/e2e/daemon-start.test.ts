/**
 * `magpie start` without REDIS_URL: it runs a private redis-server in the
 * workspace, `magpie send` finds it, and both stop cleanly on SIGINT.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { build, daemonEnv, magpie, type Proc, stop, tempWorkspace } from './daemon-helpers.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('magpie start with a private redis-server', () => {
  let fake: FakeOpenAI;
  let start: Proc | undefined;

  beforeAll(async () => {
    build();
    fake = await startFakeOpenAI({ responder: () => ({ content: 'private redis works' }) });
  }, 120_000);
  afterAll(async () => {
    await stop(start, 'SIGKILL');
    await fake?.close();
  });

  it('starts redis in <workspace>/.redis, answers send, and stops it on SIGINT', async () => {
    const workspace = tempWorkspace();
    const env = daemonEnv({ OPENAI_BASE_URL: fake.baseURL, MAGPIE_WORKSPACE: workspace });
    start = magpie(['start'], env);
    await start.waitFor(/magpie is running/, 20_000);
    const infoFile = path.join(workspace, '.redis', 'magpie.json');
    const info = JSON.parse(readFileSync(infoFile, 'utf8')) as { url: string; pid: number };
    expect(info.url).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    expect(alive(info.pid)).toBe(true);

    const send = magpie(['send', '-m', 'hello', '--timeout', '20s'], env);
    expect(await send.exited).toBe(0);
    expect(send.stdout().trim()).toBe('private redis works');

    start.child.kill('SIGINT');
    expect(await start.exited).toBe(0);
    expect(existsSync(infoFile)).toBe(false);
    expect(alive(info.pid)).toBe(false);
    expect(existsSync(path.join(workspace, '.redis', 'appendonlydir'))).toBe(true);
  });

  it('no redis-server and no REDIS_URL: one line saying how to get Redis, exit 2', async () => {
    const env = daemonEnv({
      OPENAI_BASE_URL: fake.baseURL,
      MAGPIE_WORKSPACE: tempWorkspace(),
      PATH: '/nonexistent',
    });
    const proc = magpie(['start'], env);
    expect(await proc.exited).toBe(2);
    expect(proc.stderr()).toBe(
      'magpie: redis-server not found: install Redis (apt-get install redis-server) or set REDIS_URL\n',
    );
  });
});

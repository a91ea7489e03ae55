/**
 * `magpie start` without REDIS_URL: it runs a private redis-server with a
 * password, its data in the state folder (nothing in the workspace); `magpie
 * send` and `magpie status` find it, a client without the password is
 * refused; an old `<workspace>/.redis` is moved over with its queued message,
 * which is then answered; everything stops cleanly on SIGINT.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/app/config.js';
import { Bus } from '../../src/bus/bus.js';
import { defaultStateDir } from '../../src/config/index.js';
import { silentLogger } from '../../src/log/index.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../fakes/openai-server.js';
import { alive } from '../fakes/process.js';
import { startRedis } from '../fakes/redis-server.js';
import { waitFor } from '../fakes/wait-for.js';
import { build, daemonEnv, magpie, type Proc, stop, tempWorkspace } from './daemon-helpers.js';

describe('magpie start with a private redis-server', () => {
  let fake: FakeOpenAI;
  let start: Proc | undefined;

  beforeAll(async () => {
    build();
    fake = await startFakeOpenAI({ responder: (req) => ({ content: `answered: ${lastUserText(req)}` }) });
  }, 120_000);
  afterEach(async () => {
    await stop(start); // SIGTERM: magpie stops its redis-server too
  });
  afterAll(async () => {
    await fake?.close();
  });

  /** `magpie start` on a fresh workspace without REDIS_URL, running; its private Redis's folder. */
  async function startWithPrivateRedis() {
    const workspace = tempWorkspace();
    const env = daemonEnv({ OPENAI_BASE_URL: fake.baseURL, MAGPIE_WORKSPACE: workspace });
    const daemon = magpie(['start'], env);
    start = daemon;
    await daemon.waitFor(/magpie is running/, 20_000);
    return { daemon, workspace, env, redisDir: path.join(defaultStateDir(workspace, env), 'redis') };
  }

  it('keeps Redis in the state folder with a password, answers send and status, and stops it on SIGINT', async () => {
    const { daemon, workspace, env, redisDir } = await startWithPrivateRedis();
    const infoFile = path.join(redisDir, 'magpie.json');
    const info = JSON.parse(readFileSync(infoFile, 'utf8')) as { url: string; pid: number };
    const password = readFileSync(path.join(redisDir, 'password'), 'utf8').trim();
    expect(password).toMatch(/^[0-9a-f]{64}$/);
    expect(info.url).toBe(`redis://:${password}@127.0.0.1:${new URL(info.url).port}`);
    expect(statSync(infoFile).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(redisDir, 'password')).mode & 0o777).toBe(0o600);
    expect(statSync(redisDir).mode & 0o777).toBe(0o700);
    expect(alive(info.pid)).toBe(true);
    expect(readFileSync(`/proc/${info.pid}/cmdline`, 'utf8')).not.toContain(password);
    expect(daemon.stdout() + daemon.stderr()).not.toContain(password);

    const stranger = new Redis({
      port: Number(new URL(info.url).port),
      host: '127.0.0.1',
      lazyConnect: true,
    });
    stranger.on('error', () => undefined);
    await expect(stranger.flushall()).rejects.toThrow(/NOAUTH/);
    stranger.disconnect();

    const send = magpie(['send', '-m', 'hello', '--timeout', '20s'], env);
    expect(await send.exited).toBe(0);
    expect(send.stdout().trim()).toMatch(/^answered: .*hello/);
    const status = magpie(['status'], env);
    expect(await status.exited).toBe(0);
    expect(status.stdout()).toMatch(/Redis +redis:\/\/\S*127\.0\.0\.1:\d+/); // the password hidden
    expect(status.stdout() + status.stderr()).not.toContain(password);
    const pairing = magpie(['pairing', 'list'], env);
    expect(await pairing.exited).toBe(0);
    expect(pairing.stdout().trim()).toBe('no pending pairing requests');
    const doctor = magpie(['doctor'], env);
    await doctor.exited;
    expect(doctor.stdout()).toMatch(/^✓ redis +reachable at redis:\/\/\S*127\.0\.0\.1:\d+/m);
    expect(doctor.stdout()).toMatch(/^✓ redis +persistence on \(appendonly\)/m);
    expect(doctor.stdout() + doctor.stderr()).not.toContain(password);

    daemon.child.kill('SIGINT');
    expect(await daemon.exited).toBe(0);
    expect(existsSync(infoFile)).toBe(false);
    expect(alive(info.pid)).toBe(false);
    expect(existsSync(path.join(redisDir, 'appendonlydir'))).toBe(true);
    // The turn added sessions/; nothing of Redis is in the workspace.
    expect(
      readdirSync(workspace, { recursive: true })
        .map(String)
        .filter((f) => /redis|\.aof|\.rdb|appendonly/.test(f)),
    ).toEqual([]);
  });

  it('moves an old <workspace>/.redis with its queued message to the state folder and answers it', async () => {
    const workspace = tempWorkspace();
    const env = daemonEnv({ OPENAI_BASE_URL: fake.baseURL, MAGPIE_WORKSPACE: workspace });
    const legacy = path.join(workspace, '.redis');
    mkdirSync(legacy);
    const old = await startRedis({ dir: legacy });
    const text = `queued before the upgrade ${randomUUID()}`;
    const config = parseConfig({
      REDIS_URL: old.url,
      MAGPIE_QUEUE_PREFIX: env.MAGPIE_QUEUE_PREFIX,
      MAGPIE_WORKSPACE: workspace,
    });
    const bus = await Bus.connect({ config, logger: silentLogger() });
    await bus.publishInbound({ id: `m-${randomUUID()}`, channel: 'cli', chatId: 'upgrade', content: text });
    await bus.close();
    await old.stop(); // the old magpie stopped its redis-server on exit

    start = magpie(['start'], env);
    await start.waitFor(/magpie is running/, 20_000);
    expect(existsSync(legacy)).toBe(false);
    expect(start.stderr()).toContain('moved the private Redis data out of the workspace');
    await waitFor(() => fake.requests.some((r) => lastUserText(r).includes(text)), 15_000, 'the queued turn');
    expect(existsSync(path.join(defaultStateDir(workspace, env), 'redis', 'appendonlydir'))).toBe(true);
  });

  it('when its redis-server dies: the log stays JSON lines, and SIGTERM still stops it', async () => {
    const { daemon, redisDir } = await startWithPrivateRedis();
    const { pid } = JSON.parse(readFileSync(path.join(redisDir, 'magpie.json'), 'utf8')) as { pid: number };
    process.kill(pid, 'SIGKILL');
    // The bus's connection has failed to reconnect twice, as every queue on it heard (the backup
    // queue's errors once went to stderr as bare stacks, beside the helper queue's logged ones).
    await daemon.waitFor(/"helpers queue error"[\s\S]*"helpers queue error"/, 20_000);

    // A worker heartbeat used to wait for Redis to delete its key: the stop never ended.
    await stop(daemon);

    expect(daemon.child.exitCode).toBe(0);
    const lines = (daemon.stdout() + daemon.stderr()).split('\n').filter((line) => line.trim() !== '');
    expect(lines.filter((line) => !line.startsWith('{'))).toEqual([]);
  }, 60_000);

  it('no redis-server and no REDIS_URL: one line saying how to get Redis, exit 2', async () => {
    const env = daemonEnv({
      OPENAI_BASE_URL: fake.baseURL,
      MAGPIE_WORKSPACE: tempWorkspace(),
      PATH: '/nonexistent',
    });
    const proc = magpie(['start'], env);
    expect(await proc.exited).toBe(2);
    // Start-up log lines (JSON) may come first; the error is one plain line, the last.
    const plain = proc
      .stderr()
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('{'));
    expect(plain).toEqual([
      'magpie: redis-server not found: install Redis (apt-get install redis-server) or set REDIS_URL',
    ]);
    expect(proc.stderr().endsWith('or set REDIS_URL\n')).toBe(true);
  });
});

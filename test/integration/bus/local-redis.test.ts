/**
 * The private redis-server on real redis-server processes: data, password and
 * address kept in the state folder (owner-only), nothing in the workspace; a
 * client without the password refused; the password absent from the server's
 * command line and environment; an old `<workspace>/.redis` moved over with
 * its queued messages (also across file systems, and from a server left
 * running), or refused while an older magpie still uses it.
 */
import { randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { Bus } from '../../../src/bus/bus.js';
import {
  findLocalRedis,
  type LocalRedis,
  localRedisDir,
  localRedisPasswordFile,
  resolveRedisUrl,
  startLocalRedis,
} from '../../../src/bus/local-redis.js';
import { processRuns } from '../../../src/bus/pid.js';
import { AppError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { type RedisHandle, startRedis } from '../../fakes/redis-server.js';

const logger = silentLogger();
const running: LocalRedis[] = [];
const legacyServers: RedisHandle[] = [];

afterEach(async () => {
  for (const local of running.splice(0)) await local.stop();
  for (const server of legacyServers.splice(0)) await server.stop();
});

/** A fresh workspace and state folder; `base` picks the file system of the state folder. */
function folders(base = os.tmpdir()): { workspace: string; stateDir: string } {
  const workspace = path.join(mkdtempSync(path.join(os.tmpdir(), 'magpie-lr-ws-')), 'ws');
  mkdirSync(workspace);
  return { workspace, stateDir: path.join(mkdtempSync(path.join(base, 'magpie-lr-state-')), 'state') };
}

async function start(workspace: string, stateDir: string): Promise<LocalRedis> {
  const local = await startLocalRedis({ workspace, stateDir, logger });
  running.push(local);
  return local;
}

const mode = (file: string) => statSync(file).mode & 0o777;
const portOf = (url: string) => Number(new URL(url).port);

async function refusal(client: Redis): Promise<string> {
  client.on('error', () => undefined);
  try {
    await client.ping();
    return 'answered';
  } catch (err) {
    return (err as Error).message;
  } finally {
    client.disconnect();
  }
}

/** Queues one inbound message (mailbox + turn job) on the Redis at `url`. */
async function queueMessage(url: string, prefix: string, workspace: string, content: string): Promise<void> {
  const config = parseConfig({ REDIS_URL: url, MAGPIE_QUEUE_PREFIX: prefix, MAGPIE_WORKSPACE: workspace });
  const bus = await Bus.connect({ config, logger });
  try {
    await bus.publishInbound({ id: `m-${randomUUID()}`, channel: 'cli', chatId: 'old', content });
  } finally {
    await bus.close();
  }
}

/** The queued message and turn job as the bus at `url` sees them. */
async function queued(url: string, prefix: string, workspace: string) {
  const config = parseConfig({ REDIS_URL: url, MAGPIE_QUEUE_PREFIX: prefix, MAGPIE_WORKSPACE: workspace });
  const bus = await Bus.connect({ config, logger });
  try {
    const { messages } = await bus.mailbox('cli:old').read(0);
    return { contents: messages.map((m) => m.content), jobs: await bus.pendingJobs('inbound', ['waiting']) };
  } finally {
    await bus.close();
  }
}

/** An old-layout `<workspace>/.redis` served by a real redis-server, recorded as the old magpie did. */
async function legacyServer(workspace: string): Promise<RedisHandle> {
  const dir = path.join(workspace, '.redis');
  mkdirSync(dir);
  const server = await startRedis({ dir });
  legacyServers.push(server);
  writeFileSync(
    path.join(dir, 'magpie.json'),
    `${JSON.stringify({ url: server.url, pid: server.process.pid })}\n`,
  );
  return server;
}

describe('the private redis-server', () => {
  it('keeps its data, password and address in the state folder, owner-only; nothing in the workspace', async () => {
    const { workspace, stateDir } = folders();
    const local = await start(workspace, stateDir);
    expect(local.owned).toBe(true);
    expect(local.dir).toBe(path.join(stateDir, 'redis'));
    expect(readdirSync(workspace)).toEqual([]);

    const password = readFileSync(localRedisPasswordFile(stateDir), 'utf8');
    expect(password).toMatch(/^[0-9a-f]{64}\n$/);
    expect(mode(stateDir)).toBe(0o700);
    expect(mode(localRedisDir(stateDir))).toBe(0o700);
    expect(mode(localRedisPasswordFile(stateDir))).toBe(0o600);
    const info = path.join(localRedisDir(stateDir), 'magpie.json');
    expect(mode(info)).toBe(0o600);
    expect(JSON.parse(readFileSync(info, 'utf8'))).toEqual({ url: local.url, pid: local.pid });
    expect(local.url).toBe(`redis://:${password.trim()}@127.0.0.1:${portOf(local.url)}`);

    const redis = new Redis(local.url);
    await redis.set('k', 'v');
    expect(await redis.config('GET', 'dir')).toEqual(['dir', localRedisDir(stateDir)]);
    expect(await redis.config('GET', 'appendonly')).toEqual(['appendonly', 'yes']);
    expect(await redis.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    redis.disconnect();
    await local.stop();
    expect(existsSync(path.join(localRedisDir(stateDir), 'appendonlydir'))).toBe(true);
    expect(existsSync(info)).toBe(false);
    expect(readdirSync(workspace)).toEqual([]);
  });

  it('refuses a client without the password (NOAUTH) or with a wrong one (WRONGPASS)', async () => {
    const { workspace, stateDir } = folders();
    const local = await start(workspace, stateDir);
    const port = portOf(local.url);
    expect(await refusal(new Redis({ port, host: '127.0.0.1', lazyConnect: true }))).toMatch(/^NOAUTH/);
    expect(await refusal(new Redis(`redis://:${'0'.repeat(64)}@127.0.0.1:${port}`))).toMatch(/WRONGPASS/);
    expect(await refusal(new Redis(`redis://default:@127.0.0.1:${port}`))).toMatch(/NOAUTH|WRONGPASS/);
    // A raw RESP client (what `node -e` or redis-cli would send) gets the same answer to FLUSHALL.
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = new net.Socket();
      socket.once('error', reject);
      socket.connect(port, '127.0.0.1', () => socket.write('FLUSHALL\r\n'));
      socket.once('data', (chunk) => {
        socket.destroy();
        resolve(chunk.toString());
      });
    });
    expect(reply).toMatch(/^-NOAUTH/);
    const authed = new Redis(local.url);
    expect(await authed.ping()).toBe('PONG');
    authed.disconnect();
    expect(await findLocalRedis(stateDir)).toBe(local.url);
  });

  it('never puts the password on the command line or in the environment of redis-server', async () => {
    const { workspace, stateDir } = folders();
    const local = await start(workspace, stateDir);
    const password = readFileSync(localRedisPasswordFile(stateDir), 'utf8').trim();
    const cmdline = readFileSync(`/proc/${local.pid}/cmdline`, 'utf8');
    const environ = readFileSync(`/proc/${local.pid}/environ`, 'utf8');
    expect(cmdline).toMatch(/redis-server/);
    expect(cmdline).not.toContain(password);
    expect(environ).not.toContain(password);
    expect(cmdline).not.toContain('requirepass');
  });

  it('keeps the same password across restarts; a second start reuses the running server', async () => {
    const { workspace, stateDir } = folders();
    const first = await start(workspace, stateDir);
    const again = await start(workspace, stateDir);
    expect(again).toMatchObject({ owned: false, url: first.url, pid: first.pid });
    await again.stop();
    expect(processRuns(first.pid)).toBe(true);
    const password = readFileSync(localRedisPasswordFile(stateDir), 'utf8');
    await first.stop();
    const restarted = await start(workspace, stateDir);
    expect(readFileSync(localRedisPasswordFile(stateDir), 'utf8')).toBe(password);
    expect(new URL(restarted.url).password).toBe(password.trim());
  });

  it('resolveRedisUrl without REDIS_URL and with nothing running: exit 3 saying to run magpie start', async () => {
    const { workspace, stateDir } = folders();
    const config = parseConfig({ MAGPIE_WORKSPACE: workspace, MAGPIE_STATE_DIR: stateDir });
    const err = await resolveRedisUrl(config).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'REDIS_UNAVAILABLE', exitCode: 3 });
    expect((err as Error).message).toContain('run "magpie start" first');
  });
});

describe('moving an old <workspace>/.redis', () => {
  const fileSystems = [['the same file system', os.tmpdir()]];
  // /dev/shm is a tmpfs here: the move crosses file systems (EXDEV → copy, then remove).
  if (existsSync('/dev/shm')) fileSystems.push(['another file system', '/dev/shm']);

  it.each(fileSystems)(
    'moves its queued messages into the state folder (%s) and removes it',
    async (_n, base) => {
      const { workspace, stateDir } = folders(base);
      const prefix = `test-${randomUUID()}`;
      const old = await legacyServer(workspace);
      await queueMessage(old.url, prefix, workspace, 'queued before the upgrade');
      await old.stop(); // the old magpie stopped its redis-server on exit

      const local = await start(workspace, stateDir);
      expect(existsSync(path.join(workspace, '.redis'))).toBe(false);
      expect(readdirSync(workspace)).toEqual([]);
      expect(await queued(local.url, prefix, workspace)).toEqual({
        contents: ['queued before the upgrade'],
        jobs: 1,
      });
      expect(readdirSync(localRedisDir(stateDir)).filter((n) => n.endsWith('.partial'))).toEqual([]);
    },
  );

  it('shuts down an old redis-server left running with no clients, then moves its data', async () => {
    const { workspace, stateDir } = folders();
    const prefix = `test-${randomUUID()}`;
    const old = await legacyServer(workspace);
    await queueMessage(old.url, prefix, workspace, 'written while the old server ran');

    const local = await start(workspace, stateDir);
    expect(processRuns(old.process.pid as number)).toBe(false);
    expect(existsSync(path.join(workspace, '.redis'))).toBe(false);
    expect((await queued(local.url, prefix, workspace)).contents).toEqual([
      'written while the old server ran',
    ]);
  });

  it('refuses (exit 3) while an older magpie still uses the old redis-server, and touches nothing', async () => {
    const { workspace, stateDir } = folders();
    const old = await legacyServer(workspace);
    const olderMagpie = new Redis(old.url);
    await olderMagpie.set('still', 'here');
    try {
      const err = await startLocalRedis({ workspace, stateDir, logger }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'REDIS_UNAVAILABLE', exitCode: 3 });
      expect((err as Error).message).toMatch(/an older magpie still uses the redis-server \(pid \d+\)/);
      expect(processRuns(old.process.pid as number)).toBe(true);
      expect(await olderMagpie.get('still')).toBe('here');
      expect(existsSync(path.join(workspace, '.redis', 'appendonlydir'))).toBe(true);
    } finally {
      olderMagpie.disconnect();
    }
  });

  it('puts the old data aside, not over the current data, when the state folder already has some', async () => {
    const { workspace, stateDir } = folders();
    const prefix = `test-${randomUUID()}`;
    const current = await start(workspace, stateDir);
    await queueMessage(current.url, prefix, workspace, 'current');
    await current.stop();
    const old = await legacyServer(workspace);
    await queueMessage(old.url, prefix, workspace, 'old');
    await old.stop();

    const local = await start(workspace, stateDir);
    expect((await queued(local.url, prefix, workspace)).contents).toEqual(['current']);
    expect(existsSync(path.join(workspace, '.redis'))).toBe(false);
    const aside = readdirSync(stateDir).filter((n) => n.startsWith('redis-legacy-'));
    expect(aside).toHaveLength(1);
    expect(existsSync(path.join(stateDir, aside[0] as string, 'appendonlydir'))).toBe(true);
    expect(mode(path.join(stateDir, aside[0] as string))).toBe(0o700);
  });

  it('removes an old folder that holds only a stale address file', async () => {
    const { workspace, stateDir } = folders();
    mkdirSync(path.join(workspace, '.redis'));
    writeFileSync(
      path.join(workspace, '.redis', 'magpie.json'),
      '{"url":"redis://127.0.0.1:1","pid":999999}',
    );
    await start(workspace, stateDir);
    expect(readdirSync(workspace)).toEqual([]);
  });
});

/**
 * magpie backup / restore against real redis-servers: the run's Redis as the
 * source, a second private redis-server as the "new machine". Every kept key
 * family comes back with its value and TTL, the skipped ones do not, files
 * come back byte for byte, and a damaged archive, a newer format, a wrong
 * passphrase or a non-empty target is refused with one line and nothing
 * written.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { create } from 'tar';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { createBackup } from '../../../src/backup/backup.js';
import { MANIFEST_NAME } from '../../../src/backup/manifest.js';
import { restoreBackup } from '../../../src/backup/restore.js';
import { RedisBackupStore } from '../../../src/bus/backup-store.js';
import { AppError } from '../../../src/errors/index.js';
import { type RedisHandle, startRedis } from '../../fakes/redis-server.js';

let fresh: RedisHandle;
let root: string;
let source: Redis;
let target: Redis;
let prefix: string;
let dirs: {
  workspace: string;
  state: string;
  env: string;
  newWorkspace: string;
  newState: string;
  newEnv: string;
};

beforeAll(async () => {
  fresh = await startRedis();
});
afterAll(async () => {
  await fresh.stop();
});

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'magpie-backup-'));
  prefix = `test-${randomUUID()}`;
  source = new Redis(inject('redisUrl'));
  target = new Redis(fresh.url);
  dirs = {
    workspace: path.join(root, 'ws'),
    state: path.join(root, 'state'),
    env: path.join(root, '.env'),
    newWorkspace: path.join(root, 'new', 'ws'),
    newState: path.join(root, 'new', 'state'),
    newEnv: path.join(root, 'new', '.env'),
  };
  await mkdir(path.join(dirs.workspace, 'memory'), { recursive: true });
  await mkdir(path.join(dirs.workspace, 'sessions'), { recursive: true });
  await mkdir(path.join(dirs.workspace, '.redis'), { recursive: true });
  await writeFile(path.join(dirs.workspace, 'SOUL.md'), 'be kind\n');
  await writeFile(path.join(dirs.workspace, 'memory', 'MEMORY.md'), 'Ana likes tea\n');
  await writeFile(path.join(dirs.workspace, 'sessions', 'cli_ana.jsonl'), '{"role":"user"}\n');
  await writeFile(path.join(dirs.workspace, '.redis', 'appendonly.aof'), 'old redis data');
  await mkdir(path.join(dirs.state, 'memory-index'), { recursive: true });
  await mkdir(path.join(dirs.state, 'matrix'), { recursive: true });
  await writeFile(path.join(dirs.state, 'chat-models.json'), '{"cli:ana":"big"}');
  await writeFile(path.join(dirs.state, 'memory-index', 'index.db'), 'rebuilt');
  await writeFile(path.join(dirs.state, 'dashboard-token'), 'dash-secret-123');
  await writeFile(path.join(dirs.state, 'matrix', 'bot.crypto'), 'device keys');
  await writeFile(dirs.env, 'OPENAI_API_KEY=sk-very-secret\n');
});

afterEach(async () => {
  await target.flushall();
  source.disconnect();
  target.disconnect();
  await rm(root, { recursive: true, force: true });
});

const k = (rest: string) => `${prefix}:${rest}`;

async function fillSource(): Promise<void> {
  await source.hset(k('chat-models'), 'cli:ana', 'big-model');
  await source.sadd(k('pairing:approved:telegram'), '42');
  await source.set(k('pairing:code:ABCD'), '{"x":1}', 'PX', 600_000);
  await source.rpush(k('mailbox:cli:ana'), '{"content":"hello?"}');
  await source.xadd(k('web-events:chat1'), '*', 'event', '{"text":"kept"}');
  await source.hset(k('inbound:7'), 'name', 'turn', 'data', '{}');
  await source.lpush(k('inbound:wait'), '7');
  await source.hset(k('inbound:5'), 'name', 'turn', 'data', '{}');
  await source.zadd(k('inbound:completed'), 1, '5');
  await source.xadd(k('inbound:events'), '*', 'event', 'completed');
  // Skipped: live and rebuilt state.
  await source.set(k('running:cli:ana'), 'worker-1', 'PX', 60_000);
  await source.set(k('workers:w1'), '{}', 'PX', 60_000);
  await source.hset(k('cooldown:fake-model'), 'until', '1');
  await source.set(k('inbound:7:lock'), 'token');
}

// age's default work factor takes seconds per call in JavaScript; the format and the check are the same.
const backupOf = (out: string, secrets?: { passphrase: string; workFactor?: number }) =>
  createBackup({
    workspace: dirs.workspace,
    stateDir: dirs.state,
    envFile: dirs.env,
    prefix,
    store: new RedisBackupStore(source, prefix),
    out,
    secrets,
  });

const restoreInto = (file: string, extra: { force?: boolean; secrets?: { passphrase: string } } = {}) =>
  restoreBackup({
    file,
    workspace: dirs.newWorkspace,
    stateDir: dirs.newState,
    envFile: dirs.newEnv,
    store: new RedisBackupStore(target, prefix),
    ...extra,
  });

async function failure(promise: Promise<unknown>): Promise<AppError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).message).not.toContain('\n');
  return err as AppError;
}

async function targetKeys(): Promise<string[]> {
  return (await target.keys(`${prefix}:*`)).sort();
}

describe('backup and restore', () => {
  it('restores the kept keys with their TTLs and the files into a fresh Redis and workspace, without the skipped ones', async () => {
    await fillSource();
    const out = path.join(root, 'b.tar.gz');
    const { manifest, bytes } = await backupOf(out);
    expect(bytes).toBe((await stat(out)).size);
    expect((await stat(out)).mode & 0o777).toBe(0o600);
    expect(manifest.format).toBe(1);
    expect(manifest.prefix).toBe(prefix);
    expect(manifest.secrets).toBe(false);
    const result = await restoreInto(out);
    expect(result.redisKeys).toBe(manifest.redisKeys);
    expect(await targetKeys()).toEqual(
      [
        'chat-models',
        'pairing:approved:telegram',
        'pairing:code:ABCD',
        'mailbox:cli:ana',
        'web-events:chat1',
        'inbound:7',
        'inbound:wait',
      ]
        .map(k)
        .sort(),
    );
    expect(await target.hget(k('chat-models'), 'cli:ana')).toBe('big-model');
    expect(await target.smembers(k('pairing:approved:telegram'))).toEqual(['42']);
    expect(await target.lrange(k('mailbox:cli:ana'), 0, -1)).toEqual(['{"content":"hello?"}']);
    expect((await target.xrange(k('web-events:chat1'), '-', '+'))[0]?.[1]).toEqual([
      'event',
      '{"text":"kept"}',
    ]);
    const ttl = await target.pttl(k('pairing:code:ABCD'));
    expect(ttl).toBeGreaterThan(500_000);
    expect(ttl).toBeLessThanOrEqual(600_000);
    expect(await target.pttl(k('chat-models'))).toBe(-1);
    expect(await readFile(path.join(dirs.newWorkspace, 'memory', 'MEMORY.md'), 'utf8')).toBe(
      'Ana likes tea\n',
    );
    expect(await readFile(path.join(dirs.newWorkspace, 'sessions', 'cli_ana.jsonl'), 'utf8')).toBe(
      '{"role":"user"}\n',
    );
    expect(existsSync(path.join(dirs.newWorkspace, '.redis'))).toBe(false);
    expect(await readFile(path.join(dirs.newState, 'chat-models.json'), 'utf8')).toBe('{"cli:ana":"big"}');
    // Rebuilt and secret state stays out without --with-secrets.
    expect(existsSync(path.join(dirs.newState, 'memory-index'))).toBe(false);
    expect(existsSync(path.join(dirs.newState, 'dashboard-token'))).toBe(false);
    expect(existsSync(path.join(dirs.newState, 'matrix'))).toBe(false);
    expect(existsSync(dirs.newEnv)).toBe(false);
    const archive = await readFile(out);
    expect(archive.includes(Buffer.from('sk-very-secret'))).toBe(false);
    // No temporary folder is left beside the workspace.
    expect((await readdir(path.dirname(dirs.newWorkspace))).sort()).toEqual(['state', 'ws']);
  });

  it('refuses a non-empty workspace or Redis prefix with one line and writes nothing; --force replaces and says what', async () => {
    await fillSource();
    const out = path.join(root, 'b.tar.gz');
    await backupOf(out);
    await mkdir(dirs.newWorkspace, { recursive: true });
    await writeFile(path.join(dirs.newWorkspace, 'old.md'), 'old');
    await target.set(k('something'), 'there');
    const err = await failure(restoreInto(out));
    expect(err.exitCode).toBe(2);
    expect(err.message).toContain(`workspace ${dirs.newWorkspace} holds 1 entries`);
    expect(err.message).toContain('Redis holds 1 keys');
    expect(err.message).toContain('--force');
    expect(await readdir(dirs.newWorkspace)).toEqual(['old.md']);
    expect(await targetKeys()).toEqual([k('something')]);

    const forced = await restoreInto(out, { force: true });
    expect(forced.replaced.join(' ')).toContain('kept as');
    expect(await target.get(k('something'))).toBeNull();
    expect(await target.hget(k('chat-models'), 'cli:ana')).toBe('big-model');
    expect(await readFile(path.join(dirs.newWorkspace, 'SOUL.md'), 'utf8')).toBe('be kind\n');
    const aside = (await readdir(path.dirname(dirs.newWorkspace))).find((n) => n.startsWith('ws.replaced-'));
    expect(aside).toBeDefined();
    expect(
      await readFile(path.join(path.dirname(dirs.newWorkspace), aside as string, 'old.md'), 'utf8'),
    ).toBe('old');
  });

  it.each([
    [
      'a flipped byte',
      (b: Buffer) => Buffer.concat([b.subarray(0, 200), Buffer.from([b[200]! ^ 0xff]), b.subarray(201)]),
    ],
    ['a truncated archive', (b: Buffer) => b.subarray(0, Math.floor(b.length * 0.6))],
  ])('refuses %s with one line, writing nothing', async (_name, damage) => {
    await fillSource();
    const out = path.join(root, 'b.tar.gz');
    await backupOf(out);
    const bad = path.join(root, 'bad.tar.gz');
    await writeFile(bad, damage(await readFile(out)));
    const err = await failure(restoreInto(bad));
    expect(err.exitCode).toBe(1);
    expect(err.message).toContain('the archive is damaged or not a magpie backup');
    expect(existsSync(dirs.newWorkspace)).toBe(false);
    expect(await targetKeys()).toEqual([]);
    expect(await readdir(path.dirname(dirs.newWorkspace))).toEqual([]);
  });

  it('refuses an entry whose checksum does not match its manifest', async () => {
    const staging = path.join(root, 'staging');
    await mkdir(path.join(staging, 'workspace'), { recursive: true });
    await writeFile(path.join(staging, 'redis.json'), '[]');
    await writeFile(path.join(staging, 'workspace', 'SOUL.md'), 'changed');
    const manifest = {
      format: 1,
      magpieVersion: '0.1.0',
      createdAt: new Date().toISOString(),
      prefix,
      secrets: false,
      redisKeys: 0,
      entries: [
        {
          path: 'redis.json',
          size: 2,
          sha256: '4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945',
        },
        { path: 'workspace/SOUL.md', size: 7, sha256: '0'.repeat(64) },
      ],
    };
    await writeFile(path.join(staging, MANIFEST_NAME), JSON.stringify(manifest));
    const file = path.join(root, 'forged.tar.gz');
    await create({ gzip: true, file, cwd: staging }, [MANIFEST_NAME, 'redis.json', 'workspace/SOUL.md']);
    const err = await failure(restoreInto(file));
    expect(err.message).toContain('workspace/SOUL.md does not match its checksum');
    expect(existsSync(dirs.newWorkspace)).toBe(false);
  });

  it('refuses an archive of a newer format with one line naming the upgrade', async () => {
    const staging = path.join(root, 'staging');
    await mkdir(staging, { recursive: true });
    const manifest = {
      format: 99,
      magpieVersion: '9.0.0',
      createdAt: '',
      prefix,
      secrets: false,
      redisKeys: 0,
      entries: [],
    };
    await writeFile(path.join(staging, MANIFEST_NAME), JSON.stringify(manifest));
    const file = path.join(root, 'future.tar.gz');
    await create({ gzip: true, file, cwd: staging }, [MANIFEST_NAME]);
    const err = await failure(restoreInto(file));
    expect(err.exitCode).toBe(2);
    expect(err.message).toContain('format 99, made by magpie 9.0.0');
    expect(err.message).toContain('upgrade magpie');
  });

  it('encrypts the secrets with --with-secrets; a wrong passphrase is one line (exit 2) and writes nothing', async () => {
    await fillSource();
    const out = path.join(root, 's.tar.gz');
    const { manifest } = await backupOf(out, { passphrase: 'correct horse', workFactor: 12 });
    expect(manifest.secrets).toBe(true);
    const archive = await readFile(out);
    expect(archive.includes(Buffer.from('sk-very-secret'))).toBe(false);
    const err = await failure(restoreInto(out, { secrets: { passphrase: 'wrong' } }));
    expect(err.exitCode).toBe(2);
    expect(err.message).toContain('passphrase does not open');
    expect(err.message).not.toContain('correct horse');
    expect(existsSync(dirs.newWorkspace)).toBe(false);
    expect(await targetKeys()).toEqual([]);

    const ok = await restoreInto(out, { secrets: { passphrase: 'correct horse' } });
    expect(ok.secretsRestored).toBe(true);
    expect(await readFile(dirs.newEnv, 'utf8')).toBe('OPENAI_API_KEY=sk-very-secret\n');
    expect((await stat(dirs.newEnv)).mode & 0o777).toBe(0o600);
    expect(await readFile(path.join(dirs.newState, 'dashboard-token'), 'utf8')).toBe('dash-secret-123');
    expect(await readFile(path.join(dirs.newState, 'matrix', 'bot.crypto'), 'utf8')).toBe('device keys');
  });

  it('refuses an --out folder that is missing or not writable with one line (exit 2)', async () => {
    const missing = await failure(backupOf(path.join(root, 'nope', 'b.tar.gz')));
    expect(missing.exitCode).toBe(2);
    expect(missing.message).toContain('it does not exist');
    const notFolder = path.join(root, 'file');
    await writeFile(notFolder, 'x');
    const err = await failure(backupOf(path.join(notFolder, 'b.tar.gz')));
    expect(err.exitCode).toBe(2);
    expect(err.message).toContain('it is not a folder');
  });
});

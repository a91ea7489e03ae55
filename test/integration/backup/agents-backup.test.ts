/**
 * Backups of several assistants against real redis-servers: the run's Redis
 * as the old machine, a second private redis-server as the new one, whose
 * `.env` has another queue prefix. Two agents of agents.json besides main,
 * each with a memory file and Redis keys under `<prefix>-agent-<id>`, come
 * back into their own fresh workspaces and under the new machine's prefixes
 * (found by loading the restored agents.json, as `magpie start` would); a
 * non-empty agent target is refused unless --force; an archive of main alone
 * as older magpies wrote it (format 1) still restores; an archive whose
 * agent files do not match its manifest restores nothing.
 */
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, renameSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { create, extract } from 'tar';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { agentSources } from '../../../src/backup/agents.js';
import { createBackup } from '../../../src/backup/backup.js';
import { MANIFEST_NAME } from '../../../src/backup/manifest.js';
import { restoreBackup } from '../../../src/backup/restore.js';
import { RedisBackupStore } from '../../../src/bus/backup-store.js';
import type { Config } from '../../../src/config/index.js';
import { AppError } from '../../../src/errors/index.js';
import { type RedisHandle, startRedis } from '../../fakes/redis-server.js';

let fresh: RedisHandle;
let root: string;
let source: Redis;
let target: Redis;
let oldConfig: Config;
let newConfig: Config;

const AGENTS_JSON = `{
  // main is .env's assistant; work and home each have a folder of their own
  "agents": [
    { "id": "main" },
    { "id": "work", "workspace": "ws-work" },
    { "id": "home", "workspace": "ws-home" }
  ]
}
`;

beforeAll(async () => {
  fresh = await startRedis();
});
afterAll(async () => {
  await fresh.stop();
});

function configOf(dir: string, redisUrl: string): Config {
  return parseConfig({
    REDIS_URL: redisUrl,
    MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
    MAGPIE_WORKSPACE: path.join(dir, 'ws'),
    MAGPIE_STATE_DIR: path.join(dir, 'state'),
    MAGPIE_AGENTS_CONFIG: path.join(dir, 'agents.json'),
    OPENAI_API_KEY: 'test-key',
    OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    MAGPIE_MODEL: 'fake-model',
    MAGPIE_HEARTBEAT_INTERVAL: '0',
  });
}

async function memory(workspace: string, text: string): Promise<void> {
  await mkdir(path.join(workspace, 'memory'), { recursive: true });
  await writeFile(path.join(workspace, 'memory', 'MEMORY.md'), text);
}

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'magpie-agents-backup-'));
  source = new Redis(inject('redisUrl'));
  target = new Redis(fresh.url);
  const old = path.join(root, 'old');
  await mkdir(old, { recursive: true });
  await writeFile(path.join(old, 'agents.json'), AGENTS_JSON);
  await memory(path.join(old, 'ws'), 'main: the boat is red\n');
  await memory(path.join(old, 'ws-work'), 'work: the deadline is Friday\n');
  await memory(path.join(old, 'ws-home'), 'home: water the plants on Sunday\n');
  await mkdir(path.join(old, 'state', 'agents', 'work'), { recursive: true });
  await writeFile(path.join(old, 'state', 'agents', 'work', 'chat-models.json'), '{"cli:ana":"work-model"}');
  oldConfig = configOf(old, inject('redisUrl'));
  const p = oldConfig.redis.prefix;
  await source.hset(`${p}:chat-models`, 'cli:ana', 'main-model');
  await source.sadd(`${p}-agent-work:pairing:approved:telegram`, '7');
  await source.set(`${p}-agent-work:pairing:code:WXYZ`, '{"x":1}', 'PX', 600_000);
  await source.rpush(`${p}-agent-home:mailbox:cli:ana`, '{"content":"plants?"}');
  await source.set(`${p}-agent-home:running:cli:ana`, 'worker-1', 'PX', 60_000); // skipped: live
  newConfig = configOf(path.join(root, 'new'), fresh.url);
});

afterEach(async () => {
  await target.flushall();
  const keys = await source.keys(`${oldConfig.redis.prefix}*`);
  if (keys.length > 0) await source.del(...keys);
  source.disconnect();
  target.disconnect();
  await rm(root, { recursive: true, force: true });
});

async function backupOf(out: string) {
  const found = agentSources(oldConfig, {}, (prefix) => new RedisBackupStore(source, prefix));
  return createBackup({
    ...found,
    stateDir: oldConfig.stateDir,
    envFile: path.join(root, 'old', '.env'),
    prefix: oldConfig.redis.prefix,
    store: new RedisBackupStore(source, oldConfig.redis.prefix),
    out,
  });
}

const restoreInto = (file: string, force = false) =>
  restoreBackup({
    file,
    workspace: newConfig.workspace,
    stateDir: newConfig.stateDir,
    envFile: path.join(root, 'new', '.env'),
    store: new RedisBackupStore(target, newConfig.redis.prefix),
    agentsFile: newConfig.agentsFile,
    agentStore: (id) => new RedisBackupStore(target, `${newConfig.redis.prefix}-agent-${id}`),
    force,
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

type Tampered = {
  agents: Array<{ id: string }>;
  entries: Array<{ path: string; size: number; sha256: string }>;
};

const allTargetKeys = async () => (await target.keys('*')).sort();
const readMemory = (workspace: string) => readFile(path.join(workspace, 'memory', 'MEMORY.md'), 'utf8');

describe('backups of several agents', () => {
  it("backs up every agent and restores each one's workspace and keys under its own prefix on the new machine", async () => {
    const out = path.join(root, 'b.tar.gz');
    const { manifest } = await backupOf(out);
    expect(manifest.format).toBe(2);
    expect(manifest.agents).toEqual([
      { id: 'work', prefix: `${oldConfig.redis.prefix}-agent-work`, redisKeys: 2 },
      { id: 'home', prefix: `${oldConfig.redis.prefix}-agent-home`, redisKeys: 1 },
    ]);
    const paths = manifest.entries.map((e) => e.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'redis.json',
        'workspace/memory/MEMORY.md',
        'agents/work/redis.json',
        'agents/work/workspace/memory/MEMORY.md',
        'agents/home/redis.json',
        'agents/home/workspace/memory/MEMORY.md',
        'state/agents/work/chat-models.json',
        'agents.json',
      ]),
    );

    const result = await restoreInto(out);
    expect(result.redisKeys).toBe(1);
    expect(result.agents.map((a) => [a.id, a.redisKeys])).toEqual([
      ['work', 2],
      ['home', 1],
    ]);
    // The restored agents.json is what the new machine's start-up reads: each agent is found where it was put.
    expect(await readFile(newConfig.agentsFile, 'utf8')).toBe(AGENTS_JSON);
    const restored = agentSources(newConfig, {}, (prefix) => new RedisBackupStore(target, prefix));
    const work = restored.agents.find((a) => a.id === 'work');
    const home = restored.agents.find((a) => a.id === 'home');
    expect(work?.workspace).toBe(path.join(root, 'new', 'ws-work'));
    expect(home?.workspace).toBe(path.join(root, 'new', 'ws-home'));
    expect(await readMemory(newConfig.workspace)).toBe('main: the boat is red\n');
    expect(await readMemory(work?.workspace as string)).toBe('work: the deadline is Friday\n');
    expect(await readMemory(home?.workspace as string)).toBe('home: water the plants on Sunday\n');
    expect(await readFile(path.join(newConfig.stateDir, 'agents', 'work', 'chat-models.json'), 'utf8')).toBe(
      '{"cli:ana":"work-model"}',
    );

    const p = newConfig.redis.prefix;
    expect(await allTargetKeys()).toEqual(
      [
        `${p}:chat-models`,
        `${p}-agent-work:pairing:approved:telegram`,
        `${p}-agent-work:pairing:code:WXYZ`,
        `${p}-agent-home:mailbox:cli:ana`,
      ].sort(),
    );
    expect(work?.prefix).toBe(`${p}-agent-work`);
    expect(await target.hget(`${p}:chat-models`, 'cli:ana')).toBe('main-model');
    expect(await target.smembers(`${work?.prefix}:pairing:approved:telegram`)).toEqual(['7']);
    expect(await target.pttl(`${work?.prefix}:pairing:code:WXYZ`)).toBeGreaterThan(500_000);
    expect(await target.lrange(`${home?.prefix}:mailbox:cli:ana`, 0, -1)).toEqual(['{"content":"plants?"}']);
    // No temporary folder is left beside the workspaces.
    expect((await readdir(path.join(root, 'new'))).sort()).toEqual([
      'agents.json',
      'state',
      'ws',
      'ws-home',
      'ws-work',
    ]);
  });

  it('refuses a non-empty agent workspace or prefix with one line and writes nothing; --force replaces and says what', async () => {
    const out = path.join(root, 'b.tar.gz');
    await backupOf(out);
    const p = newConfig.redis.prefix;
    const workWs = path.join(root, 'new', 'ws-work');
    await mkdir(workWs, { recursive: true });
    await writeFile(path.join(workWs, 'old.md'), 'old');
    await target.set(`${p}-agent-home:something`, 'there');

    const err = await failure(restoreInto(out));
    expect(err.exitCode).toBe(2);
    expect(err.message).toContain(`agent work's workspace ${workWs} holds 1 entries`);
    expect(err.message).toContain("Redis holds 1 keys under agent home's prefix");
    expect(err.message).toContain('--force');
    expect(await readdir(workWs)).toEqual(['old.md']);
    expect(existsSync(newConfig.workspace)).toBe(false);
    expect(existsSync(newConfig.agentsFile)).toBe(false);
    expect(await allTargetKeys()).toEqual([`${p}-agent-home:something`]);

    const forced = await restoreInto(out, true);
    const said = forced.replaced.join('; ');
    expect(said).toContain(`agent work's workspace ${workWs} holds 1 entries, kept as ${workWs}.replaced-`);
    expect(said).toContain("agent home's prefix");
    expect(await target.get(`${p}-agent-home:something`)).toBeNull();
    expect(await target.lrange(`${p}-agent-home:mailbox:cli:ana`, 0, -1)).toEqual(['{"content":"plants?"}']);
    expect(await readMemory(workWs)).toBe('work: the deadline is Friday\n');
    const aside = (await readdir(path.join(root, 'new'))).find((n) => n.startsWith('ws-work.replaced-'));
    expect(await readFile(path.join(root, 'new', aside as string, 'old.md'), 'utf8')).toBe('old');
  });

  it('restores an archive of main alone as older magpies wrote it (format 1), with agents configured on the new machine', async () => {
    const staging = path.join(root, 'staging');
    await mkdir(path.join(staging, 'workspace', 'memory'), { recursive: true });
    const files: Record<string, string> = {
      'redis.json': '[]',
      'workspace/memory/MEMORY.md': 'from an older magpie\n',
    };
    for (const [name, text] of Object.entries(files)) await writeFile(path.join(staging, name), text);
    const manifest = {
      format: 1,
      magpieVersion: '0.1.0',
      createdAt: new Date().toISOString(),
      prefix: 'magpie',
      secrets: false,
      redisKeys: 0,
      entries: Object.entries(files).map(([name, text]) => ({
        path: name,
        size: Buffer.byteLength(text),
        sha256: createHash('sha256').update(text).digest('hex'),
      })),
    };
    await writeFile(path.join(staging, MANIFEST_NAME), JSON.stringify(manifest));
    const file = path.join(root, 'v1.tar.gz');
    await create({ gzip: true, file, cwd: staging }, [MANIFEST_NAME, ...Object.keys(files)]);

    const result = await restoreInto(file);
    expect(result.manifest.format).toBe(2);
    expect(result.agents).toEqual([]);
    expect(await readMemory(newConfig.workspace)).toBe('from an older magpie\n');
    expect(existsSync(newConfig.agentsFile)).toBe(false);

    // And this magpie still writes main alone as format 1, with no agents field.
    const out = path.join(root, 'main-only.tar.gz');
    const mainOnly = await createBackup({
      workspace: path.join(root, 'old', 'ws'),
      stateDir: path.join(root, 'old', 'state'),
      envFile: path.join(root, 'old', '.env'),
      prefix: oldConfig.redis.prefix,
      store: new RedisBackupStore(source, oldConfig.redis.prefix),
      out,
    });
    expect(mainOnly.manifest.format).toBe(1);
    expect('agents' in mainOnly.manifest).toBe(false);
    expect(mainOnly.manifest.entries.some((e) => e.path.startsWith('agents'))).toBe(false);
  });

  /** The archive `out` with agent home's redis.json swapped for a payload no Redis can RESTORE (checksums updated). */
  async function withUnreadableHomeKeys(out: string): Promise<string> {
    const staging = path.join(root, 'staging-payload');
    await mkdir(staging);
    await extract({ file: out, cwd: staging });
    const json = JSON.stringify([
      { key: 'mailbox:x', pttlMs: -1, payload: Buffer.from('not a dump').toString('base64') },
    ]);
    await writeFile(path.join(staging, 'agents', 'home', 'redis.json'), json);
    const m = JSON.parse(await readFile(path.join(staging, MANIFEST_NAME), 'utf8')) as Tampered;
    const entry = m.entries.find((e) => e.path === 'agents/home/redis.json') as Tampered['entries'][number];
    entry.size = Buffer.byteLength(json);
    entry.sha256 = createHash('sha256').update(json).digest('hex');
    await writeFile(path.join(staging, MANIFEST_NAME), JSON.stringify(m));
    const bad = path.join(root, 'payload.tar.gz');
    await create({ gzip: true, file: bad, cwd: staging }, [MANIFEST_NAME, ...m.entries.map((e) => e.path)]);
    return bad;
  }

  it("undoes everything when Redis refuses one agent's keys after main's and work's were restored", async () => {
    const out = path.join(root, 'b.tar.gz');
    await backupOf(out);
    const bad = await withUnreadableHomeKeys(out);
    const err = await failure(restoreInto(bad));
    expect(err.message).toContain('Redis refused the restore, nothing was changed');
    expect(err.message).toContain('mailbox:x');
    // main's and work's prefixes, filled before home's was refused, are empty again; no workspace stays.
    expect(await allTargetKeys()).toEqual([]);
    expect(await readdir(path.join(root, 'new'))).toEqual([]);
  });

  it("with --force says which prefixes stay replaced when Redis refuses a later agent's keys", async () => {
    const out = path.join(root, 'b.tar.gz');
    await backupOf(out);
    const bad = await withUnreadableHomeKeys(out);
    const p = newConfig.redis.prefix;
    await target.set(`${p}-agent-home:kept`, 'old');
    await mkdir(path.join(root, 'new', 'ws-work'), { recursive: true });
    await writeFile(path.join(root, 'new', 'ws-work', 'old.md'), 'old');
    const err = await failure(restoreInto(bad, true));
    expect(err.message).toContain('the Redis keys of main, work were already replaced');
    // home's prefix was left as it was, and work's old workspace is back in place.
    expect(await target.get(`${p}-agent-home:kept`)).toBe('old');
    expect(await readdir(path.join(root, 'new', 'ws-work'))).toEqual(['old.md']);
    expect((await readdir(path.join(root, 'new'))).sort()).toEqual(['ws-work']);
  });

  it.each([
    [
      'files of an agent its manifest does not list',
      (m: Tampered) => {
        m.agents = m.agents.filter((a) => a.id !== 'home');
      },
      'agents/home/redis.json belongs to no agent of its manifest',
    ],
    [
      'an agent its agents.json does not know',
      (m: Tampered, staging: string) => {
        renameSync(path.join(staging, 'agents', 'home'), path.join(staging, 'agents', 'ghost'));
        m.agents = m.agents.map((a) => (a.id === 'home' ? { ...a, id: 'ghost' } : a));
        m.entries = m.entries.map((e) => ({ ...e, path: e.path.replace('agents/home/', 'agents/ghost/') }));
      },
      'its agent "ghost" is not in its agents.json',
    ],
  ])('refuses an archive with %s, writing nothing', async (_name, tamper, why) => {
    const out = path.join(root, 'b.tar.gz');
    await backupOf(out);
    const staging = path.join(root, 'staging');
    await mkdir(staging);
    await extract({ file: out, cwd: staging });
    const edited = JSON.parse(await readFile(path.join(staging, MANIFEST_NAME), 'utf8')) as Tampered;
    tamper(edited, staging);
    await writeFile(path.join(staging, MANIFEST_NAME), JSON.stringify(edited));
    const bad = path.join(root, 'bad.tar.gz');
    await create({ gzip: true, file: bad, cwd: staging }, [
      MANIFEST_NAME,
      ...edited.entries.map((e) => e.path),
    ]);
    const err = await failure(restoreInto(bad));
    expect(err.message).toContain('the archive is damaged or not a magpie backup');
    expect(err.message).toContain(why);
    expect(await allTargetKeys()).toEqual([]);
    expect(existsSync(path.join(root, 'new'))).toBe(true);
    expect(await readdir(path.join(root, 'new'))).toEqual([]);
  });
});

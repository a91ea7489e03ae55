/**
 * `magpie backup` and `magpie restore` as people run them (the built CLI
 * against real redis-servers): what they print, their exit codes, and one
 * line for every refusal — no Redis, an unwritable --out, a damaged archive,
 * a non-empty target, a missing or wrong passphrase.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { StatusReport } from '../../src/ops/status.js';
import { type RedisHandle, startRedis } from '../fakes/redis-server.js';
import { closedPort, said } from './cli-helpers.js';
import { build, daemonEnv, magpie, tempWorkspace } from './daemon-helpers.js';

describe('magpie backup and restore on the command line', () => {
  let fresh: RedisHandle;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let prefix: string;
  let source: Redis;

  beforeAll(async () => {
    build();
    fresh = await startRedis();
    dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-backup-cli-'));
    env = daemonEnv({ REDIS_URL: inject('redisUrl'), MAGPIE_WORKSPACE: tempWorkspace() });
    prefix = env.MAGPIE_QUEUE_PREFIX as string;
    source = new Redis(inject('redisUrl'));
    await source.sadd(`${prefix}:pairing:approved:telegram`, '42');
    writeFileSync(path.join(env.MAGPIE_WORKSPACE as string, 'memory', 'MEMORY.md'), 'the boat is red\n');
  }, 120_000);
  afterAll(async () => {
    source.disconnect();
    await fresh.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function run(args: string[], extra: NodeJS.ProcessEnv = {}, cwd = dir) {
    const proc = magpie(args, { ...env, ...extra }, cwd);
    const code = await proc.exited;
    return { code, stdout: proc.stdout(), lines: said(proc.stderr()) };
  }

  // Each "new machine" restores under a prefix of its own on the second redis-server.
  const newMachine = (name: string) => ({
    MAGPIE_QUEUE_PREFIX: `${prefix}-${name}`,
    REDIS_URL: fresh.url,
    MAGPIE_WORKSPACE: path.join(dir, name, 'ws'),
    MAGPIE_STATE_DIR: path.join(dir, name, 'state'),
  });

  it('writes an archive, records it for status, and restores it on a new machine; a second restore needs --force', async () => {
    const out = path.join(dir, 'b.tar.gz');
    const backup = await run(['backup', '--out', out]);
    expect(backup.code).toBe(0);
    expect(backup.stdout).toMatch(
      new RegExp(`^backup written: ${out} \\(\\d+ bytes; \\d+ files, 1 Redis keys\\)\\n$`),
    );
    const status = magpie(['status', '--json'], env);
    expect(await status.exited).toBe(0);
    const report = JSON.parse(status.stdout()) as StatusReport;
    expect(report.backup).toMatchObject({ file: out, bytes: statSync(out).size });
    const human = magpie(['status'], env);
    expect(await human.exited).toBe(0);
    expect(human.stdout()).toContain(
      `Backup     last ${report.backup?.at}, ${statSync(out).size} bytes: ${out}\n`,
    );

    const target = newMachine('m1');
    const restore = await run(['restore', out], target);
    expect(restore.lines).toEqual([]);
    expect(restore.code).toBe(0);
    expect(restore.stdout).toContain('restored ');
    expect(readFileSync(path.join(target.MAGPIE_WORKSPACE, 'memory', 'MEMORY.md'), 'utf8')).toBe(
      'the boat is red\n',
    );
    const restored = new Redis(fresh.url);
    try {
      expect(await restored.smembers(`${target.MAGPIE_QUEUE_PREFIX}:pairing:approved:telegram`)).toEqual([
        '42',
      ]);
    } finally {
      restored.disconnect();
    }

    const again = await run(['restore', out], target);
    expect(again.code).toBe(2);
    expect(again.lines).toHaveLength(1);
    expect(again.lines[0]).toMatch(
      /^magpie: the target is not empty \(workspace .* holds \d+ entries; Redis holds 1 keys/,
    );
    expect(again.lines[0]).toContain('--force');

    const forced = await run(['restore', out, '--force'], target);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toMatch(/replaced: workspace .* kept as .*\.replaced-/);
    expect(forced.stdout).toContain('replaced: Redis holds 1 keys under the prefix');
  });

  it('backs up and restores every agent of agents.json, each into its workspace and under its prefix', async () => {
    const old = path.join(dir, 'agents-old');
    mkdirSync(path.join(old, 'ws-work', 'memory'), { recursive: true });
    const agentsJson = '{ "agents": [{ "id": "main" }, { "id": "work", "workspace": "ws-work" }] }\n';
    writeFileSync(path.join(old, 'agents.json'), agentsJson);
    writeFileSync(path.join(old, 'ws-work', 'memory', 'MEMORY.md'), 'the deadline is Friday\n');
    await source.sadd(`${prefix}-agent-work:pairing:approved:telegram`, '7');
    const out = path.join(dir, 'a.tar.gz');
    const backup = await run(['backup', '--out', out], {
      MAGPIE_AGENTS_CONFIG: path.join(old, 'agents.json'),
    });
    expect(backup.lines).toEqual([]);
    expect(backup.code).toBe(0);
    expect(backup.stdout).toMatch(/; agents work \(1 Redis keys\)\)\n$/);

    const target = { ...newMachine('m4'), MAGPIE_AGENTS_CONFIG: path.join(dir, 'm4', 'agents.json') };
    const restore = await run(['restore', out], target);
    expect(restore.lines).toEqual([]);
    expect(restore.code).toBe(0);
    const workWs = path.join(dir, 'm4', 'ws-work');
    expect(restore.stdout).toContain(`restored agent work: workspace ${workWs}, 1 Redis keys\n`);
    expect(readFileSync(target.MAGPIE_AGENTS_CONFIG, 'utf8')).toBe(agentsJson);
    expect(readFileSync(path.join(workWs, 'memory', 'MEMORY.md'), 'utf8')).toBe('the deadline is Friday\n');
    const restored = new Redis(fresh.url);
    try {
      expect(
        await restored.smembers(`${target.MAGPIE_QUEUE_PREFIX}-agent-work:pairing:approved:telegram`),
      ).toEqual(['7']);
    } finally {
      restored.disconnect();
    }
  });

  it('refuses a damaged archive with one line (exit 1) and writes nothing', async () => {
    const out = path.join(dir, 'd.tar.gz');
    expect((await run(['backup', '--out', out])).code).toBe(0);
    const bytes = readFileSync(out);
    const bad = path.join(dir, 'd-bad.tar.gz');
    writeFileSync(bad, bytes.subarray(0, bytes.length - 30));
    const target = newMachine('m2');
    const result = await run(['restore', bad], target);
    expect(result.code).toBe(1);
    expect(result.lines).toHaveLength(1);
    expect(result.lines[0]).toMatch(
      /^magpie: the archive is damaged or not a magpie backup: .*; nothing was restored$/,
    );
    expect(existsSync(target.MAGPIE_WORKSPACE)).toBe(false);
  });

  it('says in one line when Redis is unreachable (exit 3) or --out cannot be written (exit 2)', async () => {
    const noRedis = await run(['backup', '--out', path.join(dir, 'x.tar.gz')], {
      REDIS_URL: `redis://127.0.0.1:${await closedPort()}`,
    });
    expect(noRedis.code).toBe(3);
    expect(noRedis.lines).toHaveLength(1);
    expect(noRedis.lines[0]).toContain('unreachable');
    const badOut = await run(['backup', '--out', path.join(dir, 'missing', 'x.tar.gz')]);
    expect(badOut.code).toBe(2);
    expect(badOut.lines).toEqual([
      `magpie: cannot write the backup into ${path.join(dir, 'missing')}: it does not exist`,
    ]);
  });

  it('needs the passphrase for --with-secrets; a wrong one is one line (exit 2) and nothing is restored', async () => {
    const cwd = path.join(dir, 'secrets');
    mkdirSync(cwd);
    writeFileSync(path.join(cwd, '.env'), 'OPENAI_API_KEY=sk-in-dot-env-123\n');
    const out = path.join(dir, 's.tar.gz');
    const missing = await run(['backup', '--with-secrets', '--out', out], {}, cwd);
    expect(missing.code).toBe(2);
    expect(missing.lines).toEqual([
      'magpie: --with-secrets needs a passphrase: set MAGPIE_BACKUP_PASSPHRASE or run on a terminal',
    ]);
    expect(existsSync(out)).toBe(false);
    const made = await run(
      ['backup', '--with-secrets', '--out', out],
      { MAGPIE_BACKUP_PASSPHRASE: 'right horse' },
      cwd,
    );
    expect(made.code).toBe(0);
    expect(made.stdout).toContain('secrets encrypted');
    expect(readFileSync(out).includes(Buffer.from('sk-in-dot-env-123'))).toBe(false);

    const newCwd = path.join(dir, 'new-cwd');
    mkdirSync(newCwd);
    const target = newMachine('m3');
    const wrong = await run(
      ['restore', out, '--with-secrets'],
      { ...target, MAGPIE_BACKUP_PASSPHRASE: 'wrong horse' },
      newCwd,
    );
    expect(wrong.code).toBe(2);
    expect(wrong.lines).toHaveLength(1);
    expect(wrong.lines[0]).toContain('the passphrase does not open');
    expect(wrong.lines[0]).not.toContain('horse');
    expect(existsSync(target.MAGPIE_WORKSPACE)).toBe(false);
    expect(existsSync(path.join(newCwd, '.env'))).toBe(false);

    const right = await run(
      ['restore', out, '--with-secrets'],
      { ...target, MAGPIE_BACKUP_PASSPHRASE: 'right horse' },
      newCwd,
    );
    expect(right.code).toBe(0);
    expect(right.stdout).toContain('secrets restored');
    expect(readFileSync(path.join(newCwd, '.env'), 'utf8')).toBe('OPENAI_API_KEY=sk-in-dot-env-123\n');
  });
});

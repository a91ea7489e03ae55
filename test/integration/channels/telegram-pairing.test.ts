/**
 * `magpie pairing list` / `magpie pairing approve <code>` as a subprocess
 * (through tsx, so no build is needed) against the test Redis.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RedisPairingStore } from '../../../src/bus/pairing-store.js';
import { AccessControl } from '../../../src/channels/access.js';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../../..');

async function magpie(
  args: string[],
  prefix: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
      cwd: root,
      env: {
        ...process.env,
        REDIS_URL: inject('redisUrl'),
        MAGPIE_QUEUE_PREFIX: prefix,
        LOG_LEVEL: 'silent',
      },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

let redis: Redis;
beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
});
afterAll(async () => {
  await redis.quit();
});

describe('magpie pairing', () => {
  it('lists pending requests and approves one by code', async () => {
    const prefix = `test-${randomUUID()}`;
    const access = new AccessControl({
      channel: 'telegram',
      allowFrom: [],
      pairing: new RedisPairingStore(redis, prefix),
    });
    const outcome = await access.requestPairing(
      { id: '8001', username: 'dora', displayName: 'Dora D' },
      '8001',
    );
    if (outcome.status !== 'send') throw new Error(`expected a new code, got ${outcome.status}`);
    const { code } = outcome;

    const list = await magpie(['pairing', 'list'], prefix);
    expect(list.code).toBe(0);
    expect(list.stdout.trim().split('\n')).toHaveLength(1);
    expect(list.stdout).toContain(`${code}  telegram  8001 (Dora D @dora)  chat 8001`);

    const approve = await magpie(['pairing', 'approve', code.toLowerCase()], prefix);
    expect(approve.code).toBe(0);
    expect(approve.stdout).toContain('approved telegram user 8001');
    expect(await access.isAllowed({ id: '8001' })).toBe(true);

    const empty = await magpie(['pairing', 'list'], prefix);
    expect(empty.stdout.trim()).toBe('no pending pairing requests');
  }, 30_000);

  it('exits 1 with a clear line for an unknown code, 2 for bad usage', async () => {
    const prefix = `test-${randomUUID()}`;
    const unknown = await magpie(['pairing', 'approve', 'ABCDEF'], prefix);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe('magpie: no pending request with code ABCDEF');
    const bad = await magpie(['pairing', 'approve'], prefix);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('pairing approve <code>');
  }, 30_000);
});

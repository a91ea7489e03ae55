/**
 * Scheduled backups across two workers on a real Redis: each tick of the
 * `backup` job scheduler is taken by exactly one of them, the folder is
 * pruned to KEEP, and the last backup is recorded for `magpie status`.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { scheduledBackup } from '../../../src/backup/schedule.js';
import { BackupQueue } from '../../../src/bus/backup-queue.js';
import { RedisBackupStore } from '../../../src/bus/backup-store.js';
import { silentLogger } from '../../../src/log/index.js';
import { waitFor } from '../../fakes/wait-for.js';

let root: string;
let prefix: string;
const connections: Redis[] = [];
const queues: BackupQueue[] = [];

const connect = (worker = false) => {
  const c = new Redis(inject('redisUrl'), worker ? { maxRetriesPerRequest: null } : {});
  connections.push(c);
  return c;
};

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'magpie-scheduled-'));
  prefix = `test-${randomUUID()}`;
  await mkdir(path.join(root, 'ws'));
  await writeFile(path.join(root, 'ws', 'SOUL.md'), 'be kind\n');
});
afterEach(async () => {
  for (const q of queues.splice(0)) await q.close();
  for (const c of connections.splice(0)) c.disconnect();
  await rm(root, { recursive: true, force: true });
});

describe('scheduled backups', () => {
  it('runs each tick once across two workers and keeps the newest KEEP archives', async () => {
    const dir = path.join(root, 'backups');
    const ticks: Array<{ worker: string; id: string }> = [];
    for (const worker of ['w1', 'w2']) {
      const redis = connect();
      const store = new RedisBackupStore(redis, prefix);
      const queue = new BackupQueue({
        redis,
        workerConnection: () => connect(true),
        prefix,
        repeat: { everyMs: 300 },
        logger: silentLogger(),
        run: async (tick) => {
          ticks.push({ worker, id: tick.id });
          const options = {
            workspace: path.join(root, 'ws'),
            stateDir: path.join(root, 'state'),
            dir,
            keep: 2,
          };
          await scheduledBackup(
            { ...options, envFile: path.join(root, '.env'), prefix, store, logger: silentLogger() },
            tick.at,
          );
        },
      });
      queues.push(queue);
      await queue.start();
    }
    await waitFor(() => ticks.length >= 5, 15_000, 'five scheduled backups');
    for (const q of queues.splice(0)) await q.close();
    const ids = ticks.map((t) => t.id);
    expect(new Set(ids).size).toBe(ids.length);
    const files = (await readdir(dir)).sort();
    expect(files).toHaveLength(2);
    for (const f of files) expect(f).toMatch(/^magpie-backup-\d{8}T\d{6}-\d{3}Z\.tar\.gz$/);
    const last = await new RedisBackupStore(connect(), prefix).last();
    expect(last).toBeDefined();
    expect(path.basename(last?.file ?? '')).toBe(files[1]);
    expect(last?.bytes).toBe((await stat(last?.file ?? '')).size);
  });
});

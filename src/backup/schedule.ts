/**
 * Scheduled backups (MAGPIE_BACKUP_SCHEDULE, MAGPIE_BACKUP_KEEP,
 * MAGPIE_BACKUP_DIR): each tick of the `backup` queue's job scheduler
 * (bus/backup-queue.ts, one job per tick across every worker) writes
 * `magpie-backup-<time>.tar.gz` into the backup folder, records it in Redis
 * for `magpie status` and the dashboard, and removes the oldest beyond KEEP.
 * The file is named by the tick, so a redone tick replaces its own file.
 */
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { RedisBackupStore } from '../bus/backup-store.js';
import { ensurePrivateDir } from '../config/state-dir.js';
import type { Logger } from '../log/index.js';
import { type BackupOptions, type BackupResult, createBackup } from './backup.js';

const NAME = /^magpie-backup-\d{8}T\d{6}(-\d+)?Z\.tar\.gz$/;

/** The file name of the backup of the tick at `at` (ms). */
export function backupFileName(at: number): string {
  const iso = new Date(at).toISOString(); // 2026-11-26T04:05:06.789Z
  const stamp = `${iso.slice(0, 10).replace(/-/g, '')}T${iso.slice(11, 19).replace(/:/g, '')}`;
  return `magpie-backup-${stamp}-${iso.slice(20, 23)}Z.tar.gz`;
}

/** Options of {@link scheduledBackup}. */
export interface ScheduledBackupOptions {
  workspace: string;
  stateDir: string;
  envFile: string;
  prefix: string;
  /** The other agents of agents.json, and the file. @defaultValue none */
  agents?: BackupOptions['agents'];
  agentsFile?: string | undefined;
  /** The folder of scheduled backups (made owner-only). */
  dir: string;
  /** Backups kept; older ones are removed. */
  keep: number;
  store: Pick<RedisBackupStore, 'snapshot' | 'recordLast'>;
  logger: Logger;
}

/** Makes the backup of one tick, records it, prunes the folder to `keep`. */
export async function scheduledBackup(options: ScheduledBackupOptions, at: number): Promise<BackupResult> {
  ensurePrivateDir(options.dir);
  const result = await createBackup({ ...options, out: path.join(options.dir, backupFileName(at)) });
  await options.store.recordLast({
    file: result.file,
    at: result.manifest.createdAt,
    bytes: result.bytes,
  });
  const removed = await prune(options.dir, options.keep);
  options.logger.info(
    { file: result.file, bytes: result.bytes, removed: removed.length },
    'scheduled backup written',
  );
  return result;
}

/** Removes the oldest magpie backups of `dir` beyond `keep`; resolves with the names removed. */
export async function prune(dir: string, keep: number): Promise<string[]> {
  const names = (await readdir(dir)).filter((n) => NAME.test(n)).sort();
  const old = names.slice(0, Math.max(0, names.length - keep));
  for (const name of old) await rm(path.join(dir, name), { force: true });
  return old;
}

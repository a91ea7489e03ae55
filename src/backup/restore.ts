/**
 * `magpie restore`: an archive of `magpie backup` into an empty workspace and
 * an empty Redis prefix. The archive is extracted into a temporary folder
 * beside the workspace and checked entry by entry first; the secrets are
 * opened next (a wrong passphrase stops here); only then is anything moved:
 * the workspace by one rename, the Redis keys by one script (the workspace is
 * moved back if Redis refuses), the state folder's files each written
 * atomically. A non-empty target is refused unless `force`, which sets aside
 * the old workspace (`<workspace>.replaced-<time>`) and replaces the keys.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { RedisBackupStore, RedisEntry } from '../bus/backup-store.js';
import { ensurePrivateDir, writePrivateFile } from '../config/state-dir.js';
import { AppError, ExitCode } from '../errors/index.js';
import { extractArchive } from './archive.js';
import { REDIS_NAME } from './backup.js';
import { corrupted, type Manifest } from './manifest.js';
import { decryptSecrets, SECRETS_NAME, type SecretFiles } from './secrets.js';

/** Options of {@link restoreBackup}. */
export interface RestoreOptions {
  /** The archive. */
  file: string;
  workspace: string;
  stateDir: string;
  /** Where the secrets' `.env` goes. */
  envFile: string;
  store: Pick<RedisBackupStore, 'count' | 'restore'> & { readonly prefix?: string };
  /** Replace a non-empty target. @defaultValue false */
  force?: boolean;
  /** Open and restore the archive's secrets with this passphrase. @defaultValue the secrets stay out */
  secrets?: { passphrase: string } | undefined;
  /** @defaultValue () => new Date() */
  now?: () => Date;
}

/** What a restore did. */
export interface RestoreResult {
  manifest: Manifest;
  redisKeys: number;
  /** What `force` replaced, one phrase each (empty without it). */
  replaced: string[];
  /** Whether the secrets were restored; false when the archive has none or they were not asked for. */
  secretsRestored: boolean;
}

const RedisJsonSchema = z.array(
  z.object({ key: z.string().min(1), pttlMs: z.number().int(), payload: z.string() }),
);

/** Restores one archive; see the file's header. */
export async function restoreBackup(options: RestoreOptions): Promise<RestoreResult> {
  const workspace = path.resolve(options.workspace);
  await mkdir(path.dirname(workspace), { recursive: true });
  const temp = await mkdtemp(path.join(path.dirname(workspace), '.magpie-restore-'));
  try {
    const manifest = await extractArchive(options.file, temp);
    const redis = await readRedisEntries(temp);
    const secrets =
      options.secrets && manifest.secrets
        ? await decryptSecrets(await readFile(path.join(temp, SECRETS_NAME)), options.secrets.passphrase)
        : undefined;
    const stateFiles = await stateEntries(temp, manifest, secrets);
    const occupied = await occupiedTargets(options, workspace, stateFiles, secrets);
    if (occupied.length > 0 && !options.force)
      throw new AppError(
        'CONFIG_INVALID',
        `the target is not empty (${occupied.join('; ')}): restore into an empty workspace and Redis prefix, or add --force to replace them`,
        { exitCode: ExitCode.config },
      );
    const setAside = await moveWorkspaceIn(temp, workspace, options.now ?? (() => new Date()));
    let restored: number;
    try {
      ({ restored } = await options.store.restore(redis, options.force === true));
    } catch (err) {
      await rename(workspace, path.join(temp, 'workspace'));
      if (setAside) await rename(setAside, workspace);
      throw err;
    }
    ensurePrivateDir(options.stateDir);
    for (const [relative, content] of stateFiles) {
      const target = path.join(options.stateDir, relative);
      ensurePrivateDir(path.dirname(target));
      writePrivateFile(target, content.toString('utf8'));
    }
    if (secrets?.env) writePrivateFile(options.envFile, secrets.env.toString('utf8'));
    return {
      manifest,
      redisKeys: restored,
      replaced: options.force
        ? occupied.map((o) => (setAside && o.startsWith('workspace') ? `${o}, kept as ${setAside}` : o))
        : [],
      secretsRestored: secrets !== undefined,
    };
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
}

async function readRedisEntries(dir: string): Promise<RedisEntry[]> {
  let parsed: z.infer<typeof RedisJsonSchema>;
  try {
    parsed = RedisJsonSchema.parse(JSON.parse(await readFile(path.join(dir, REDIS_NAME), 'utf8')));
  } catch {
    throw corrupted(`its ${REDIS_NAME} is missing or malformed`);
  }
  return parsed.map((e) => ({ key: e.key, pttlMs: e.pttlMs, payload: Buffer.from(e.payload, 'base64') }));
}

/** The state folder's files to write, by path under it: the plain ones, then the secret ones. */
async function stateEntries(dir: string, manifest: Manifest, secrets: SecretFiles | undefined) {
  const files = new Map<string, Buffer>();
  for (const entry of manifest.entries) {
    if (entry.path.startsWith('state/'))
      files.set(entry.path.slice(6), await readFile(path.join(dir, entry.path)));
  }
  for (const [name, content] of Object.entries(secrets ?? {})) {
    if (name.startsWith('state/')) files.set(name.slice(6), content);
  }
  for (const relative of files.keys()) {
    if (relative.split('/').includes('..') || path.isAbsolute(relative))
      throw corrupted(`${relative} leaves the state folder`);
  }
  return files;
}

/** Which targets already hold something, one phrase each. */
async function occupiedTargets(
  options: RestoreOptions,
  workspace: string,
  stateFiles: Map<string, Buffer>,
  secrets: SecretFiles | undefined,
): Promise<string[]> {
  const occupied: string[] = [];
  const inWorkspace = await entriesOf(workspace);
  if (inWorkspace > 0) occupied.push(`workspace ${workspace} holds ${inWorkspace} entries`);
  const keys = await options.store.count();
  if (keys > 0) occupied.push(`Redis holds ${keys} keys under the prefix`);
  const present = [...stateFiles.keys()].filter((f) => existsSync(path.join(options.stateDir, f)));
  if (present.length > 0) occupied.push(`the state folder has ${present.join(', ')}`);
  if (secrets?.env && existsSync(options.envFile)) occupied.push(`${options.envFile} exists`);
  return occupied;
}

async function entriesOf(dir: string): Promise<number> {
  try {
    return (await readdir(dir)).length;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw new AppError('INTERNAL', `cannot read ${dir}: ${(err as Error).message}`, { cause: err });
  }
}

/** Renames the extracted workspace into place; resolves with where a replaced one was set aside. */
async function moveWorkspaceIn(
  temp: string,
  workspace: string,
  now: () => Date,
): Promise<string | undefined> {
  const extracted = path.join(temp, 'workspace');
  if (!existsSync(extracted)) await mkdir(extracted, { mode: 0o700 });
  let setAside: string | undefined;
  if ((await entriesOf(workspace)) > 0) {
    setAside = `${workspace}.replaced-${now().toISOString().replace(/[:.]/g, '-')}`;
    await rename(workspace, setAside);
  } else if (existsSync(workspace)) {
    await rmdir(workspace);
  }
  await rename(extracted, workspace);
  return setAside;
}

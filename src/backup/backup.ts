/**
 * `magpie backup`: the Redis keys that matter (one atomic snapshot), the
 * workspace and the state folder's kept files (read while the daemon runs,
 * re-read when they change underneath), the same for every other agent of
 * agents.json (its keys under its own prefix, its workspace, under
 * `agents/<id>/`) with agents.json itself, optionally the secrets encrypted,
 * and a manifest with each entry's sha256, in one .tar.gz written atomically.
 */
import { constants } from 'node:fs';
import { access, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { RedisBackupStore, RedisEntry } from '../bus/backup-store.js';
import { AppError, ExitCode } from '../errors/index.js';
import { writeArchive } from './archive.js';
import { copyStable, entryOf } from './copy-files.js';
import {
  AGENTS_FILE_NAME,
  FORMAT_VERSION,
  MAIN_ONLY_FORMAT,
  MANIFEST_NAME,
  type Manifest,
  type ManifestAgent,
  type ManifestEntry,
  magpieVersion,
} from './manifest.js';
import { secretPaths, skipInState, skipInWorkspace } from './parts.js';
import { encryptSecrets, SECRETS_NAME, type SecretFiles } from './secrets.js';

/** The archive entry holding the Redis keys. */
export const REDIS_NAME = 'redis.json';

/** Another agent of agents.json, as a backup reads it. */
export interface AgentSource {
  id: string;
  /** Its workspace; not copied again when it is main's. */
  workspace: string;
  /** Its Redis key prefix (`<prefix>-agent-<id>`). */
  prefix: string;
  store: Pick<RedisBackupStore, 'snapshot'>;
}

/** Options of {@link createBackup}. */
export interface BackupOptions {
  workspace: string;
  stateDir: string;
  /** The `.env` file (only read with `secrets`). */
  envFile: string;
  /** The Redis key prefix (recorded in the manifest). */
  prefix: string;
  store: Pick<RedisBackupStore, 'snapshot'>;
  /** The agents of agents.json other than main. @defaultValue none (main alone) */
  agents?: readonly AgentSource[] | undefined;
  /** agents.json, kept as `agents.json` when it exists. @defaultValue none */
  agentsFile?: string | undefined;
  /** The archive to write (replaced atomically if it exists). */
  out: string;
  /**
   * With a passphrase: the secrets too, encrypted (`workFactor`: scrypt's log2 N,
   * lowered only by tests). @defaultValue no secrets
   */
  secrets?: { passphrase: string; workFactor?: number } | undefined;
  /** @defaultValue () => new Date() */
  now?: () => Date;
}

/** A backup written. */
export interface BackupResult {
  file: string;
  bytes: number;
  manifest: Manifest;
}

/** Writes one backup archive; see the file's header. */
export async function createBackup(options: BackupOptions): Promise<BackupResult> {
  const out = path.resolve(options.out);
  await checkWritable(path.dirname(out));
  const staging = await mkdtemp(path.join(os.tmpdir(), 'magpie-backup-'));
  try {
    const redis = await options.store.snapshot();
    const entries: ManifestEntry[] = [await writeRedis(staging, REDIS_NAME, redis)];
    entries.push(
      ...(await copyStable({ from: options.workspace, staging, under: 'workspace', skip: skipInWorkspace })),
      ...(await copyStable({ from: options.stateDir, staging, under: 'state', skip: skipInState })),
    );
    const agents: ManifestAgent[] = [];
    for (const agent of options.agents ?? []) {
      const keys = await agent.store.snapshot();
      entries.push(await writeRedis(staging, `agents/${agent.id}/${REDIS_NAME}`, keys));
      if (path.resolve(agent.workspace) !== path.resolve(options.workspace))
        entries.push(
          ...(await copyStable({
            from: agent.workspace,
            staging,
            under: `agents/${agent.id}/workspace`,
            skip: skipInWorkspace,
          })),
        );
      agents.push({ id: agent.id, prefix: agent.prefix, redisKeys: keys.length });
    }
    const agentsJson = options.agentsFile === undefined ? undefined : await readIfThere(options.agentsFile);
    if (agentsJson) {
      await writeFile(path.join(staging, AGENTS_FILE_NAME), agentsJson, { mode: 0o600 });
      entries.push(entryOf(AGENTS_FILE_NAME, agentsJson));
    }
    if (options.secrets) {
      const { passphrase, workFactor } = options.secrets;
      const sealed = await encryptSecrets(await readSecrets(options, staging), passphrase, workFactor);
      await writeFile(path.join(staging, SECRETS_NAME), sealed, { mode: 0o600 });
      entries.push(entryOf(SECRETS_NAME, sealed));
    }
    const withAgents = agents.length > 0 || agentsJson !== undefined;
    const manifest: Manifest = {
      format: withAgents ? FORMAT_VERSION : MAIN_ONLY_FORMAT,
      magpieVersion: magpieVersion(),
      createdAt: (options.now ?? (() => new Date()))().toISOString(),
      prefix: options.prefix,
      secrets: options.secrets !== undefined,
      redisKeys: redis.length,
      ...(withAgents ? { agents } : {}),
      entries,
    };
    await writeFile(path.join(staging, MANIFEST_NAME), `${JSON.stringify(manifest, null, 2)}\n`, {
      mode: 0o600,
    });
    const bytes = await writeArchive(staging, manifest, out);
    return { file: out, bytes, manifest };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** Writes one prefix's keys as `name` in the staging folder; resolves with its manifest entry. */
async function writeRedis(staging: string, name: string, keys: RedisEntry[]): Promise<ManifestEntry> {
  const json = Buffer.from(
    JSON.stringify(
      keys.map((e) => ({ key: e.key, pttlMs: e.pttlMs, payload: e.payload.toString('base64') })),
    ),
  );
  const file = path.join(staging, name);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeFile(file, json, { mode: 0o600 });
  return entryOf(name, json);
}

/** The secret files that exist: `.env` as `env`, the state folder's as `state/<path>`. */
async function readSecrets(options: BackupOptions, staging: string): Promise<SecretFiles> {
  const files: SecretFiles = {};
  const env = await readIfThere(options.envFile);
  if (env) files.env = env;
  const { token, matrix } = secretPaths(options.stateDir);
  const tokenText = await readIfThere(token);
  if (tokenText) files['state/dashboard-token'] = tokenText;
  const sealedDir = path.join(staging, '.secrets');
  for (const entry of await copyStable({ from: matrix, staging: sealedDir, under: 'state/matrix' })) {
    files[entry.path] = await readFile(path.join(sealedDir, entry.path));
  }
  await rm(sealedDir, { recursive: true, force: true });
  return files;
}

async function readIfThere(file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new AppError('INTERNAL', `cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
}

async function checkWritable(dir: string): Promise<void> {
  try {
    if (!(await stat(dir)).isDirectory()) throw Object.assign(new Error('not a folder'), { code: 'ENOTDIR' });
    await access(dir, constants.W_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'it does not exist'
        : code === 'ENOTDIR'
          ? 'it is not a folder'
          : 'it is not writable';
    throw new AppError('CONFIG_INVALID', `cannot write the backup into ${dir}: ${why}`, {
      exitCode: ExitCode.config,
    });
  }
}

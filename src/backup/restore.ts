/**
 * `magpie restore`: an archive of `magpie backup` into empty workspaces and
 * empty Redis prefixes (main's and each agent's of agents.json). The archive
 * is extracted into a temporary folder beside the workspace and checked
 * entry by entry first; the archive's agents.json is read and every agent it
 * holds must be in it; the secrets are opened next (a wrong passphrase stops
 * here); only then is anything moved: each workspace by one rename (a copy
 * first when it is on another file system), each prefix's Redis keys by one
 * script, the state folder's files and agents.json each written atomically.
 * If Redis refuses one prefix, the workspaces are moved back and the prefixes
 * already filled are emptied again (with `force` those stay replaced, and the
 * error says which). A non-empty target is refused unless `force`, which sets
 * aside an old workspace (`<workspace>.replaced-<time>`) or agents.json, and
 * replaces the keys.
 */
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rename, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { type AgentSpec, MAIN_AGENT, parseAgents } from '../agents/spec.js';
import type { RedisBackupStore, RedisEntry } from '../bus/backup-store.js';
import { ensurePrivateDir, writePrivateFile } from '../config/state-dir.js';
import { AppError, ExitCode } from '../errors/index.js';
import { extractArchive } from './archive.js';
import { REDIS_NAME } from './backup.js';
import { AGENTS_FILE_NAME, corrupted, type Manifest } from './manifest.js';
import { decryptSecrets, SECRETS_NAME, type SecretFiles } from './secrets.js';

type TargetStore = Pick<RedisBackupStore, 'count' | 'restore' | 'clear'>;

/** Options of {@link restoreBackup}. */
export interface RestoreOptions {
  /** The archive. */
  file: string;
  workspace: string;
  stateDir: string;
  /** Where the secrets' `.env` goes. */
  envFile: string;
  store: TargetStore & { readonly prefix?: string };
  /** Where the archive's agents.json goes (MAGPIE_AGENTS_CONFIG); needed for an archive with agents. */
  agentsFile?: string | undefined;
  /** The store of agent `id`'s prefix (`<prefix>-agent-<id>`); needed for an archive with agents. */
  agentStore?: ((id: string) => TargetStore) | undefined;
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
  /** Each other agent restored: its workspace and how many keys went under its prefix. */
  agents: Array<{ id: string; workspace: string; redisKeys: number }>;
  /** What `force` replaced, one phrase each (empty without it). */
  replaced: string[];
  /** Whether the secrets were restored; false when the archive has none or they were not asked for. */
  secretsRestored: boolean;
}

const RedisJsonSchema = z.array(
  z.object({ key: z.string().min(1), pttlMs: z.number().int(), payload: z.string() }),
);

/** One workspace and one prefix to fill: main's or an agent's. */
interface Target {
  id: string;
  /** The extracted workspace (may not exist: an empty one). */
  extracted: string;
  workspace: string;
  redis: RedisEntry[];
  store: TargetStore;
}

/** A workspace moved into place, and how to undo it. */
interface Placed {
  target: Target;
  setAside: string | undefined;
  copied: boolean;
}

/** Restores one archive; see the file's header. */
export async function restoreBackup(options: RestoreOptions): Promise<RestoreResult> {
  const workspace = path.resolve(options.workspace);
  const now = options.now ?? (() => new Date());
  await mkdir(path.dirname(workspace), { recursive: true });
  const temp = await mkdtemp(path.join(path.dirname(workspace), '.magpie-restore-'));
  try {
    const manifest = await extractArchive(options.file, temp);
    const { agentsJson, specs } = await readAgents(temp, manifest, options, workspace);
    const main: Target = {
      id: MAIN_AGENT,
      extracted: path.join(temp, 'workspace'),
      workspace: specs.get(MAIN_AGENT)?.workspacePath ?? workspace,
      redis: await readRedisEntries(temp, REDIS_NAME),
      store: options.store,
    };
    const targets = [main];
    for (const agent of manifest.agents ?? []) {
      const spec = specs.get(agent.id) as AgentSpec;
      targets.push({
        id: agent.id,
        extracted: path.join(temp, 'agents', agent.id, 'workspace'),
        workspace: spec.workspacePath,
        redis: await readRedisEntries(temp, `agents/${agent.id}/${REDIS_NAME}`),
        store: (options.agentStore as (id: string) => TargetStore)(agent.id),
      });
    }
    const secrets =
      options.secrets && manifest.secrets
        ? await decryptSecrets(await readFile(path.join(temp, SECRETS_NAME)), options.secrets.passphrase)
        : undefined;
    const stateFiles = await stateEntries(temp, manifest, secrets);
    const occupied = await occupiedTargets(options, targets, stateFiles, secrets, agentsJson);
    if (occupied.length > 0 && !options.force)
      throw new AppError(
        'CONFIG_INVALID',
        `the target is not empty (${occupied.map((o) => o.text).join('; ')}): restore into an empty workspace and Redis prefix, or add --force to replace them`,
        { exitCode: ExitCode.config },
      );
    const placed: Placed[] = [];
    const restored = new Map<string, number>();
    try {
      // An agent sharing main's workspace (never copied twice) has nothing to move.
      for (const target of targets)
        if (target === main || target.workspace !== main.workspace)
          placed.push(await placeWorkspace(target, now));
      for (const target of targets)
        restored.set(target.id, (await target.store.restore(target.redis, options.force === true)).restored);
    } catch (err) {
      for (const p of placed.reverse()) await undoPlace(p);
      // The prefixes filled before the one refused were empty (no --force): empty them again.
      if (restored.size > 0 && !options.force) {
        for (const target of targets) if (restored.has(target.id)) await target.store.clear();
      } else if (restored.size > 0)
        throw new AppError(
          'INTERNAL',
          `${(err as Error).message}; the workspaces were put back, but the Redis keys of ${[...restored.keys()].join(', ')} were already replaced`,
          { cause: err },
        );
      throw err;
    }
    ensurePrivateDir(options.stateDir);
    for (const [relative, content] of stateFiles) {
      const target = path.join(options.stateDir, relative);
      ensurePrivateDir(path.dirname(target));
      writePrivateFile(target, content.toString('utf8'));
    }
    let agentsSetAside: string | undefined;
    if (agentsJson && options.agentsFile) {
      const file = path.resolve(options.agentsFile);
      if (occupied.some((o) => o.agentsFile)) {
        agentsSetAside = `${file}.replaced-${stamp(now)}`;
        await rename(file, agentsSetAside);
      }
      ensurePrivateDir(path.dirname(file));
      writePrivateFile(file, agentsJson.toString('utf8'));
    }
    if (secrets?.env) writePrivateFile(options.envFile, secrets.env.toString('utf8'));
    const asideOf = new Map(placed.map((p) => [p.target.workspace, p.setAside]));
    return {
      manifest,
      redisKeys: restored.get(MAIN_AGENT) ?? 0,
      agents: targets
        .filter((t) => t !== main)
        .map((t) => ({ id: t.id, workspace: t.workspace, redisKeys: restored.get(t.id) ?? 0 })),
      replaced: options.force
        ? occupied.map((o) => {
            const aside = o.workspace ? asideOf.get(o.workspace) : o.agentsFile ? agentsSetAside : undefined;
            return aside ? `${o.text}, kept as ${aside}` : o.text;
          })
        : [],
      secretsRestored: secrets !== undefined,
    };
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
}

/**
 * The archive's agents.json and its agents, read as if it were at
 * `options.agentsFile`: every agent of the manifest must be in it, and the
 * files under `agents/` must be those agents' keys and workspaces.
 */
async function readAgents(
  dir: string,
  manifest: Manifest,
  options: RestoreOptions,
  workspace: string,
): Promise<{ agentsJson: Buffer | undefined; specs: Map<string, AgentSpec> }> {
  const agents = manifest.agents ?? [];
  const ids = new Set(agents.map((a) => a.id));
  if (ids.size !== agents.length) throw corrupted('its manifest lists an agent twice');
  if (ids.has(MAIN_AGENT)) throw corrupted('its manifest lists main among the other agents');
  for (const { path: name } of manifest.entries) {
    const [top, id] = name.split('/', 2);
    if (top !== 'agents') continue;
    const ok =
      id !== undefined &&
      ids.has(id) &&
      (name === `agents/${id}/${REDIS_NAME}` || name.startsWith(`agents/${id}/workspace/`));
    if (!ok) throw corrupted(`${name} belongs to no agent of its manifest`);
  }
  const listed = manifest.entries.some((e) => e.path === AGENTS_FILE_NAME);
  // A format-1 archive (main alone) has neither: it restores as before.
  if (!listed && agents.length === 0) return { agentsJson: undefined, specs: new Map() };
  if (!listed) throw corrupted(`it holds agents but no ${AGENTS_FILE_NAME}`);
  if (!options.agentsFile || !options.agentStore)
    throw new AppError(
      'INTERNAL',
      'this restore cannot place the agents of the archive (no agents file or store)',
    );
  const agentsJson = await readFile(path.join(dir, AGENTS_FILE_NAME));
  const file = parseAgents(agentsJson.toString('utf8'), {
    file: options.agentsFile,
    workspace,
    stateDir: options.stateDir,
  });
  const specs = new Map(file.agents.map((a) => [a.id, a]));
  for (const id of ids)
    if (!specs.has(id)) throw corrupted(`its agent "${id}" is not in its ${AGENTS_FILE_NAME}`);
  return { agentsJson, specs };
}

async function readRedisEntries(dir: string, name: string): Promise<RedisEntry[]> {
  let parsed: z.infer<typeof RedisJsonSchema>;
  try {
    parsed = RedisJsonSchema.parse(JSON.parse(await readFile(path.join(dir, name), 'utf8')));
  } catch {
    throw corrupted(`its ${name} is missing or malformed`);
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

/** A target that already holds something: the phrase, and the workspace or agents.json it names. */
interface Occupied {
  text: string;
  workspace?: string;
  agentsFile?: true;
}

/** Which targets already hold something, one phrase each. */
async function occupiedTargets(
  options: RestoreOptions,
  targets: Target[],
  stateFiles: Map<string, Buffer>,
  secrets: SecretFiles | undefined,
  agentsJson: Buffer | undefined,
): Promise<Occupied[]> {
  const occupied: Occupied[] = [];
  for (const target of targets) {
    const whose = target.id === MAIN_AGENT ? '' : `agent ${target.id}'s `;
    const inWorkspace = await entriesOf(target.workspace);
    if (inWorkspace > 0 && (target === targets[0] || target.workspace !== targets[0]?.workspace))
      occupied.push({
        text: `${whose}workspace ${target.workspace} holds ${inWorkspace} entries`,
        workspace: target.workspace,
      });
    const keys = await target.store.count();
    if (keys > 0)
      occupied.push({
        text: `Redis holds ${keys} keys under ${target.id === MAIN_AGENT ? 'the prefix' : `agent ${target.id}'s prefix`}`,
      });
  }
  const present = [...stateFiles.keys()].filter((f) => existsSync(path.join(options.stateDir, f)));
  if (present.length > 0) occupied.push({ text: `the state folder has ${present.join(', ')}` });
  if (agentsJson && options.agentsFile && existsSync(options.agentsFile)) {
    const there = await readFile(options.agentsFile);
    if (!there.equals(agentsJson))
      occupied.push({
        text: `${path.resolve(options.agentsFile)} differs from the archive's`,
        agentsFile: true,
      });
  }
  if (secrets?.env && existsSync(options.envFile)) occupied.push({ text: `${options.envFile} exists` });
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

function stamp(now: () => Date): string {
  return now().toISOString().replace(/[:.]/g, '-');
}

/**
 * Moves an extracted workspace into place (a non-empty one there is set aside
 * first): one rename, or, on another file system, a copy beside it renamed in.
 */
async function placeWorkspace(target: Target, now: () => Date): Promise<Placed> {
  const { extracted, workspace } = target;
  if (!existsSync(extracted)) await mkdir(extracted, { recursive: true, mode: 0o700 });
  await mkdir(path.dirname(workspace), { recursive: true });
  let setAside: string | undefined;
  if ((await entriesOf(workspace)) > 0) {
    setAside = `${workspace}.replaced-${stamp(now)}`;
    await rename(workspace, setAside);
  } else if (existsSync(workspace)) {
    await rmdir(workspace);
  }
  try {
    await rename(extracted, workspace);
    return { target, setAside, copied: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') {
      if (setAside) await rename(setAside, workspace);
      throw err;
    }
  }
  const near = await mkdtemp(path.join(path.dirname(workspace), '.magpie-restore-'));
  try {
    await cp(extracted, path.join(near, 'workspace'), { recursive: true });
    await rename(path.join(near, 'workspace'), workspace);
  } catch (err) {
    if (setAside) await rename(setAside, workspace);
    throw err;
  } finally {
    await rm(near, { recursive: true, force: true });
  }
  return { target, setAside, copied: true };
}

/** Puts back what {@link placeWorkspace} did. */
async function undoPlace({ target, setAside, copied }: Placed): Promise<void> {
  if (copied) await rm(target.workspace, { recursive: true, force: true });
  else await rename(target.workspace, target.extracted);
  if (setAside) await rename(setAside, target.workspace);
}

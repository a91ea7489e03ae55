/**
 * The archive's `manifest.json`: which magpie and which archive format made
 * it, when, from which Redis prefix, the other agents of agents.json (each
 * one's prefix and key count), and the sha256 and size of every other entry,
 * checked before anything is restored.
 *
 * Format 2 added the agents (`agents.json`, `agents/<id>/redis.json`,
 * `agents/<id>/workspace/…`). An archive of main alone is still written as
 * format 1, which it is byte for byte, so an older magpie restores it; one
 * with agents is format 2, which an older magpie refuses ("upgrade magpie")
 * rather than restoring main and silently dropping the agents.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { AGENT_ID } from '../agents/spec.js';
import { AppError, ExitCode } from '../errors/index.js';

/** The newest archive format this magpie writes and reads. Bump it when the layout changes, and add a migration below. */
export const FORMAT_VERSION = 2;

/** The format of an archive without agents (its layout did not change in format 2). */
export const MAIN_ONLY_FORMAT = 1;

/** agents.json's name inside the archive. */
export const AGENTS_FILE_NAME = 'agents.json';

/** The manifest's name inside the archive. */
export const MANIFEST_NAME = 'manifest.json';

const EntrySchema = z.object({
  /** Path inside the archive (`workspace/…`, `state/…`, `redis.json`, `secrets.age`). */
  path: z.string().min(1),
  size: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});
export type ManifestEntry = z.infer<typeof EntrySchema>;

const AgentEntrySchema = z.object({
  /** As in agents.json; its files are under `agents/<id>/`. */
  id: z.string().regex(AGENT_ID),
  /** The Redis prefix its keys were read under (`<prefix>-agent-<id>`). */
  prefix: z.string(),
  redisKeys: z.number().int().nonnegative(),
});
export type ManifestAgent = z.infer<typeof AgentEntrySchema>;

export const ManifestSchema = z.object({
  format: z.number().int().positive(),
  magpieVersion: z.string(),
  createdAt: z.string(),
  /** The Redis key prefix the keys were read under (keys are stored relative to it). */
  prefix: z.string(),
  /** Whether `secrets.age` (the encrypted .env and key files) is included. */
  secrets: z.boolean(),
  redisKeys: z.number().int().nonnegative(),
  /** The agents of agents.json other than main (format 2; none in format 1). */
  agents: z.array(AgentEntrySchema).max(32).optional(),
  entries: z.array(EntrySchema),
});
export type Manifest = z.infer<typeof ManifestSchema>;

/**
 * Migrations from an older format to the next, by the older format's number:
 * `MIGRATIONS[n]` turns a format-n manifest (and the extracted folder) into
 * format n + 1.
 */
const MIGRATIONS: Readonly<Record<number, (manifest: Manifest, dir: string) => Manifest>> = {
  // Format 1 is main alone: the same layout without agents.
  1: (manifest) => ({ ...manifest, format: 2, agents: [] }),
};

/** A manifest of the current format from `text`; a newer or unknown format, or a malformed manifest, is refused. */
export function readManifest(text: string, dir: string): Manifest {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw corrupted('its manifest.json is not JSON');
  }
  const parsed = ManifestSchema.safeParse(raw);
  if (!parsed.success) throw corrupted(`its manifest.json is malformed (${parsed.error.issues[0]?.message})`);
  let manifest = parsed.data;
  if (manifest.format > FORMAT_VERSION)
    throw new AppError(
      'INVALID_MESSAGE',
      `the archive has format ${manifest.format}, made by magpie ${manifest.magpieVersion}; this magpie reads format ${FORMAT_VERSION} and older: upgrade magpie to restore it`,
      { exitCode: ExitCode.config },
    );
  while (manifest.format < FORMAT_VERSION) {
    const migrate = MIGRATIONS[manifest.format];
    if (!migrate) throw corrupted(`its format ${manifest.format} is unknown`);
    manifest = migrate(manifest, dir);
  }
  return manifest;
}

/** How many of the archive's entries are files (all but the Redis keys: `redis.json`, `agents/<id>/redis.json`). */
export function fileCount(manifest: Manifest): number {
  return manifest.entries.filter((e) => !/^(agents\/[^/]+\/)?redis\.json$/.test(e.path)).length;
}

/** The error for an archive that cannot be trusted (exit 1). */
export function corrupted(why: string): AppError {
  return new AppError(
    'INVALID_MESSAGE',
    `the archive is damaged or not a magpie backup: ${why}; nothing was restored`,
  );
}

/** This magpie's version, from its package.json (two folders up from src/backup and dist/chunks). */
export function magpieVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

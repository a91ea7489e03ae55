/**
 * Copies a folder's files into the backup's staging folder in one pass while
 * the daemon keeps writing: each file is read between two `lstat`s, and read
 * again when its size or modification time changed underneath (a session
 * appended to, a memory file rewritten). Symbolic links are not followed
 * (one could point outside the workspace, at a secret), and only regular
 * files are kept.
 */
import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../errors/index.js';
import type { ManifestEntry } from './manifest.js';

/** Reads of one file before it counts as changing too often to copy. @defaultValue 5 */
const MAX_READS = 5;

/** Options of {@link copyStable}. */
export interface CopyOptions {
  /** The folder copied. */
  from: string;
  /** The staging folder (the archive's root). */
  staging: string;
  /** Where its files go inside the archive (`workspace`, `state`). */
  under: string;
  /** Paths (relative to `from`, `/`-separated) left out, with everything below them. */
  skip?: (relative: string) => boolean;
}

/** Copies the regular files of `from` into `staging/under`; resolves with their manifest entries. */
export async function copyStable(options: CopyOptions): Promise<ManifestEntry[]> {
  const entries: ManifestEntry[] = [];
  for (const relative of await listFiles(options.from, '', options.skip ?? (() => false))) {
    const content = await readStable(path.join(options.from, relative));
    if (content === undefined) continue; // removed while we walked
    const name = `${options.under}/${relative}`;
    const target = path.join(options.staging, name);
    await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    await writeFile(target, content, { mode: 0o600 });
    entries.push(entryOf(name, content));
  }
  return entries;
}

/** The manifest entry of `content` stored as `name`. */
export function entryOf(name: string, content: Buffer): ManifestEntry {
  return { path: name, size: content.length, sha256: createHash('sha256').update(content).digest('hex') };
}

async function listFiles(
  root: string,
  relative: string,
  skip: (relative: string) => boolean,
): Promise<string[]> {
  let dirents: import('node:fs').Dirent[];
  try {
    dirents = await readdir(path.join(root, relative), { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new AppError('INTERNAL', `cannot read ${path.join(root, relative)}: ${(err as Error).message}`);
  }
  const files: string[] = [];
  for (const d of dirents.sort((a, b) => a.name.localeCompare(b.name))) {
    const child = relative === '' ? d.name : `${relative}/${d.name}`;
    if (skip(child)) continue;
    if (d.isDirectory()) files.push(...(await listFiles(root, child, skip)));
    else if (d.isFile()) files.push(child);
  }
  return files;
}

/** The file's bytes, read when it did not change during the read; undefined when it is gone. */
async function readStable(file: string): Promise<Buffer | undefined> {
  for (let read = 0; read < MAX_READS; read++) {
    try {
      const before = await lstat(file);
      if (!before.isFile()) return undefined;
      const content = await readFile(file);
      const after = await lstat(file);
      if (
        before.size === after.size &&
        before.mtimeMs === after.mtimeMs &&
        before.ino === after.ino &&
        content.length === after.size
      )
        return content;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new AppError('INTERNAL', `cannot read ${file}: ${(err as Error).message}`, { cause: err });
    }
  }
  throw new AppError(
    'INTERNAL',
    `${file} kept changing while it was read (${MAX_READS} tries): try the backup again`,
  );
}

/**
 * The archive on disk: a gzip-compressed tar (the `tar` package) holding
 * `manifest.json` first, then the entries it lists. Written to a temporary
 * name beside the target and renamed into place, so a crash never leaves a
 * half-written archive under the real name; read back by extracting into a
 * private temporary folder and checking every entry against the manifest
 * before anything is restored.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmod, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { create, extract } from 'tar';
import { AppError, ExitCode } from '../errors/index.js';
import { corrupted, MANIFEST_NAME, type Manifest, readManifest } from './manifest.js';

/** Writes `staging` (manifest.json and `manifest.entries`) to `file`, atomically; resolves with its size. */
export async function writeArchive(staging: string, manifest: Manifest, file: string): Promise<number> {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.partial`;
  try {
    // Owner-only from the first byte: the archive holds conversations and memory.
    await writeFile(temp, '', { mode: 0o600, flag: 'wx' });
    await create({ gzip: true, file: temp, cwd: staging, portable: true, strict: true }, [
      MANIFEST_NAME,
      ...manifest.entries.map((e) => e.path),
    ]);
    await chmod(temp, 0o600);
    await rename(temp, file);
    return (await stat(file)).size;
  } catch (err) {
    await rm(temp, { force: true });
    throw new AppError('INTERNAL', `cannot write ${file}: ${(err as Error).message}`, {
      cause: err,
      exitCode: ExitCode.config,
    });
  }
}

/**
 * Extracts `file` into the empty folder `dir` and checks it: only regular
 * files and folders, no path outside `dir`, a manifest of a known format, and
 * every file's size and sha256 as listed (nothing missing, nothing extra).
 * A damaged, truncated or foreign archive throws one line.
 */
export async function extractArchive(file: string, dir: string): Promise<Manifest> {
  try {
    await stat(file);
  } catch (err) {
    throw new AppError('NOT_FOUND', `cannot read the archive ${file}: ${(err as Error).message}`, {
      exitCode: ExitCode.config,
    });
  }
  try {
    // Synchronous: a failed asynchronous extract can still be writing when it rejects.
    extract({
      file,
      cwd: dir,
      sync: true,
      strict: true,
      preservePaths: false,
      // Links could point outside the folder: only files and folders are ever written by magpie backup.
      filter: (_path, entry) => 'type' in entry && (entry.type === 'File' || entry.type === 'Directory'),
    });
  } catch (err) {
    throw corrupted((err as Error).message.split('\n')[0] ?? 'unreadable');
  }
  let text: string;
  try {
    text = await readFile(path.join(dir, MANIFEST_NAME), 'utf8');
  } catch {
    throw corrupted('it has no manifest.json');
  }
  const manifest = readManifest(text, dir);
  await verifyEntries(dir, manifest);
  return manifest;
}

async function verifyEntries(dir: string, manifest: Manifest): Promise<void> {
  const listed = new Set(manifest.entries.map((e) => e.path));
  for (const found of await filesUnder(dir, '')) {
    if (found !== MANIFEST_NAME && !listed.has(found)) throw corrupted(`${found} is not in its manifest`);
  }
  for (const entry of manifest.entries) {
    let content: Buffer;
    try {
      content = await readFile(path.join(dir, entry.path));
    } catch {
      throw corrupted(`${entry.path} is missing`);
    }
    const sha256 = createHash('sha256').update(content).digest('hex');
    if (content.length !== entry.size || sha256 !== entry.sha256)
      throw corrupted(`${entry.path} does not match its checksum`);
  }
}

async function filesUnder(root: string, relative: string): Promise<string[]> {
  const out: string[] = [];
  for (const d of await readdir(path.join(root, relative), { withFileTypes: true })) {
    const child = relative === '' ? d.name : `${relative}/${d.name}`;
    if (d.isDirectory()) out.push(...(await filesUnder(root, child)));
    else out.push(child);
  }
  return out;
}

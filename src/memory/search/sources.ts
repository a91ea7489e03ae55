/**
 * What the memory index may read, and how it reads it. Only three shapes of
 * path qualify: `memory/MEMORY.md`, the daily notes `memory/YYYYMM/YYYYMMDD.md`
 * and the session logs `sessions/<name>[.<stamp>].jsonl`. Symlinks, hard-linked
 * files, FIFOs and anything else are skipped, and a file is read only through
 * a descriptor checked after opening (O_NOFOLLOW, the inode the scan saw, one
 * link, and a real path that is exactly the expected one), so nothing placed
 * in the workspace can make memory search return another file's text.
 */
import { constants, lstatSync, readdirSync, realpathSync, type Stats } from 'node:fs';
import { type FileHandle, open, readlink } from 'node:fs/promises';
import path from 'node:path';
import { sessionKeyFromFileName } from '../../sessions/session-key.js';
import { isMissing } from '../../workspace/cached-file.js';

export type SourceKind = 'longterm' | 'note' | 'session';

/** A file the index may read, as the scan found it. */
export interface ScannedFile {
  /** Path relative to the workspace, '/'-separated. */
  rel: string;
  kind: SourceKind;
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  /** A note's date as YYYYMMDD. */
  day?: number;
  /** A session log's key (`telegram:42`). */
  session?: string;
}

const NOTE_DIR = /^(\d{4})(\d{2})$/;
const NOTE_FILE = /^(\d{4})(\d{2})(\d{2})\.md$/;
/** `<name>.jsonl` (the live log) or `<name>.<stamp>.jsonl` (kept by /new). */
const SESSION_FILE = /^([A-Za-z0-9@_%-]+)(?:\.[0-9A-Za-z-]+)?\.jsonl$/;

/** True for a real folder (not a symlink to one). */
function realDir(dir: string): boolean {
  const st = lstatOrUndefined(dir);
  return st?.isDirectory() === true;
}

function lstatOrUndefined(file: string): Stats | undefined {
  try {
    return lstatSync(file, { throwIfNoEntry: false });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw err;
  }
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (err) {
    if (isMissing(err) || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw err;
  }
}

/** A regular, single-link file's facts, or undefined for anything else. */
function plainFile(file: string): Pick<ScannedFile, 'dev' | 'ino' | 'size' | 'mtimeMs'> | undefined {
  const st = lstatOrUndefined(file);
  if (!st?.isFile() || st.nlink !== 1) return undefined;
  return { dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
}

/** True for a real calendar date. */
function isDate(year: number, month: number, day: number): boolean {
  const d = new Date(Date.UTC(year, month - 1, day));
  return d.getUTCFullYear() === year && d.getUTCMonth() === month - 1 && d.getUTCDate() === day;
}

/**
 * Lists the files the index covers in `workspace` (a real path). Synchronous
 * lstat calls: a thousand notes take a few milliseconds, less than the
 * thread-pool round trips of the asynchronous ones.
 */
export function scanSources(workspace: string): ScannedFile[] {
  const out: ScannedFile[] = [];
  const memoryDir = path.join(workspace, 'memory');
  if (realDir(memoryDir)) {
    const longTerm = plainFile(path.join(memoryDir, 'MEMORY.md'));
    if (longTerm) out.push({ rel: 'memory/MEMORY.md', kind: 'longterm', ...longTerm });
    for (const month of listDir(memoryDir).sort()) {
      const m = NOTE_DIR.exec(month);
      if (!m || !realDir(path.join(memoryDir, month))) continue;
      for (const name of listDir(path.join(memoryDir, month)).sort()) {
        const n = NOTE_FILE.exec(name);
        if (!n || `${n[1]}${n[2]}` !== month) continue;
        const [year, mon, day] = [Number(n[1]), Number(n[2]), Number(n[3])];
        if (!isDate(year, mon, day)) continue;
        const facts = plainFile(path.join(memoryDir, month, name));
        if (facts)
          out.push({
            rel: `memory/${month}/${name}`,
            kind: 'note',
            day: year * 10000 + mon * 100 + day,
            ...facts,
          });
      }
    }
  }
  const sessionsDir = path.join(workspace, 'sessions');
  if (realDir(sessionsDir)) {
    for (const name of listDir(sessionsDir).sort()) {
      const s = SESSION_FILE.exec(name);
      const key = s ? sessionKeyFromFileName(s[1]!) : undefined;
      if (key === undefined) continue;
      const facts = plainFile(path.join(sessionsDir, name));
      if (facts) out.push({ rel: `sessions/${name}`, kind: 'session', session: key, ...facts });
    }
  }
  return out;
}

const READ_FLAGS =
  constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | (constants.O_NOCTTY ?? 0);

let procFd: boolean | undefined;

/** The real path of an open descriptor: /proc on Linux, else the real path of its name. */
async function openedPath(handle: FileHandle, name: string): Promise<string> {
  if (procFd !== false) {
    try {
      const real = await readlink(`/proc/self/fd/${handle.fd}`);
      procFd = true;
      return real;
    } catch (err) {
      if (procFd === true) throw err;
      procFd = false;
    }
  }
  return realpathSync(name);
}

/**
 * Opens a scanned file for reading, or returns undefined when it is no
 * longer the file the scan saw, or not where it should be (a symlink, a
 * hard link, a folder swapped for a link meanwhile).
 */
export async function openSource(workspace: string, file: ScannedFile): Promise<FileHandle | undefined> {
  const expected = path.join(workspace, ...file.rel.split('/'));
  let handle: FileHandle;
  try {
    handle = await open(expected, READ_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (isMissing(err) || code === 'ELOOP' || code === 'ENOTDIR') return undefined;
    throw err;
  }
  try {
    const st = await handle.stat();
    const same = st.isFile() && st.nlink === 1 && st.dev === file.dev && st.ino === file.ino;
    if (same && (await openedPath(handle, expected)) === expected) return handle;
  } catch (err) {
    await handle.close();
    if (isMissing(err)) return undefined;
    throw err;
  }
  await handle.close();
  return undefined;
}

/** Reads `length` bytes from `position` (fewer at the end of the file). */
export async function readRange(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await handle.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

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

/** A regular, single-link file as a ScannedFile, or undefined for anything else. */
function plainFile(file: string, rel: string, kind: SourceKind, day?: number): ScannedFile | undefined {
  const st = lstatOrUndefined(file);
  if (!st?.isFile() || st.nlink !== 1) return undefined;
  const out: ScannedFile = { rel, kind, dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
  if (day !== undefined) out.day = day;
  return out;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** True for a real calendar date. */
function isDate(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!);
}

/** Session log names already checked (a name decodes to a key or not, once and for all). */
const sessionNames = new Map<string, boolean>();

function isSessionLog(name: string): boolean {
  let ok = sessionNames.get(name);
  if (ok === undefined) {
    const s = SESSION_FILE.exec(name);
    ok = s !== null && sessionKeyFromFileName(s[1]!) !== undefined;
    if (sessionNames.size >= 100_000) sessionNames.clear();
    sessionNames.set(name, ok);
  }
  return ok;
}

/**
 * Lists the files the index covers in `workspace` (a real path). Synchronous
 * lstat calls: a thousand notes take a few milliseconds, less than the
 * thread-pool round trips of the asynchronous ones.
 */
export function scanSources(workspace: string): ScannedFile[] {
  const out: ScannedFile[] = [];
  const memoryDir = `${workspace}/memory`;
  if (realDir(memoryDir)) {
    const longTerm = plainFile(`${memoryDir}/MEMORY.md`, 'memory/MEMORY.md', 'longterm');
    if (longTerm) out.push(longTerm);
    for (const month of listDir(memoryDir).sort()) {
      if (!NOTE_DIR.test(month) || !realDir(`${memoryDir}/${month}`)) continue;
      for (const name of listDir(`${memoryDir}/${month}`).sort()) {
        const n = NOTE_FILE.exec(name);
        if (!n || !name.startsWith(month)) continue;
        const [year, mon, day] = [Number(n[1]), Number(n[2]), Number(n[3])];
        if (!isDate(year, mon, day)) continue;
        const file = plainFile(
          `${memoryDir}/${month}/${name}`,
          `memory/${month}/${name}`,
          'note',
          year * 10000 + mon * 100 + day,
        );
        if (file) out.push(file);
      }
    }
  }
  const sessionsDir = `${workspace}/sessions`;
  if (realDir(sessionsDir)) {
    for (const name of listDir(sessionsDir).sort()) {
      if (!isSessionLog(name)) continue;
      const file = plainFile(`${sessionsDir}/${name}`, `sessions/${name}`, 'session');
      if (file) out.push(file);
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

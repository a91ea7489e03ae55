/**
 * Opens a path inside the workspace one component at a time, never by its
 * full name, so a folder swapped for a symlink between a check and a use
 * cannot lead a file tool out. On Linux this emulates openat(2) with
 * RESOLVE_BENEATH: the workspace root is opened as a directory descriptor and
 * each component is opened relative to its verified parent through
 * `/proc/self/fd/<fd>/<name>` with O_NOFOLLOW. A symlink on the way is
 * resolved here (at most 40), and followed only while it stays inside.
 * Elsewhere a portable fallback checks by real path, then compares what it
 * opened (dev and inode) with what it checked.
 */
import { constants, type Stats } from 'node:fs';
import { access, type FileHandle, mkdir, open, readlink } from 'node:fs/promises';
import path from 'node:path';
import {
  changedError,
  checkWrite,
  errnoOf,
  FileToolError,
  isInside,
  lstatOrMissing,
  outsideError,
  protectedError,
  protectedFolder,
  realWorkspace,
  relativeInWorkspace,
  toPosix,
} from './workspace-path.js';
import { walkPortable } from './workspace-walk-portable.js';
import type { Walked, WalkOptions } from './workspace-walk-types.js';

export type { Walked, WalkedDir, WalkOptions } from './workspace-walk-types.js';

/** How paths are confined: `proc` (Linux, descriptor-relative), `portable` (real path + inode check), `auto` (proc when /proc is there). */
export type Confinement = 'auto' | 'proc' | 'portable';

const PROC_FD = '/proc/self/fd';
const MAX_LINKS = 40;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const DELETED = ' (deleted)';

const fdPath = (handle: FileHandle): string => `${PROC_FD}/${handle.fd}`;
const components = (rel: string): string[] => rel.split('/').filter((c) => c !== '' && c !== '.');
const joinRel = (dir: string, name: string | undefined): string =>
  name === undefined ? dir : dir === '' ? name : `${dir}/${name}`;

let procAvailable: Promise<boolean> | undefined;

/** The confinement `auto` stands for on this machine. */
export function resolveConfinement(confinement: Confinement): Promise<'proc' | 'portable'> {
  if (confinement !== 'auto') return Promise.resolve(confinement);
  if (process.platform !== 'linux') return Promise.resolve('portable');
  procAvailable ??= access(PROC_FD).then(
    () => true,
    () => false, // no /proc mounted: the portable fallback
  );
  return procAvailable.then((ok) => (ok ? 'proc' : 'portable'));
}

/**
 * Walks `requested` from the workspace root and returns its folder, held
 * open, and the entry's name. The caller opens the entry by `entryPath`
 * (O_NOFOLLOW), calls `verify` on what it opened, and closes the walk.
 *
 * @throws FileToolError for paths outside the workspace, in protected folders
 *   (writes), through too many symlinks, or through a file; fs errors pass on.
 */
export async function walkInWorkspace(
  workspace: string,
  requested: string,
  confinement: Confinement,
  options: WalkOptions = {},
): Promise<Walked> {
  const root = await realWorkspace(workspace);
  const rel = relativeInWorkspace(root, workspace, requested);
  return (await resolveConfinement(confinement)) === 'proc'
    ? walkProc(root, workspace, requested, rel, options)
    : walkPortable(root, workspace, requested, options);
}

interface Level {
  handle: FileHandle;
  name: string;
}

async function walkProc(
  root: string,
  configured: string,
  requested: string,
  rel: string,
  options: WalkOptions,
): Promise<Walked> {
  const stack: Level[] = [{ handle: await open(root, DIR_FLAGS), name: '' }];
  const closeFrom = async (depth: number): Promise<void> => {
    const closing = await Promise.allSettled(stack.splice(depth).map((level) => level.handle.close()));
    const failed = closing.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
  };
  try {
    if ((await readlink(fdPath(stack[0]!.handle))) !== root) throw changedError(requested);
    const pending = components(rel);
    let links = 0;
    const follow = async (linkPath: string): Promise<void> => {
      links += 1;
      if (links > MAX_LINKS) {
        throw new FileToolError('loop', `path "${requested}" goes through too many symbolic links`);
      }
      const target = await readlink(linkPath).catch((err: unknown) => {
        // EINVAL: no longer a symlink; ENOENT: gone. Either way it changed since lstat.
        throw errnoOf(err) === 'EINVAL' || errnoOf(err) === 'ENOENT' ? changedError(requested) : err;
      });
      if (path.isAbsolute(target)) {
        const base = isInside(root, target) ? root : path.resolve(configured);
        if (!isInside(base, target)) throw outsideError(requested);
        await closeFrom(1); // an absolute target starts again from the root
        pending.unshift(...components(toPosix(path.relative(base, target))));
      } else {
        pending.unshift(...components(target));
      }
    };

    while (pending.length > 0) {
      const name = pending.shift() as string;
      if (name === '..') {
        if (stack.length === 1) throw outsideError(requested);
        await closeFrom(stack.length - 1);
        continue;
      }
      const parent = stack[stack.length - 1] as Level;
      const folder = options.forWrite && stack.length === 1 ? protectedFolder(name) : undefined;
      if (folder) throw protectedError(requested, folder);
      const entryPath = `${fdPath(parent.handle)}/${name}`;
      if (pending.length === 0 && options.want !== 'dir') {
        const entry = await lstatOrMissing(entryPath);
        if (entry?.isSymbolicLink()) {
          await follow(entryPath);
          continue;
        }
        return await finish(parent, name, entry);
      }
      const opened = await openFolder(entryPath, requested, pending.length === 0, options.createParents);
      if (opened === 'symlink') await follow(entryPath);
      else stack.push({ handle: opened, name });
    }
    return await finish(stack[stack.length - 1] as Level, undefined, undefined);
  } catch (err) {
    await closeFrom(0);
    throw err;
  }

  async function finish(level: Level, name: string | undefined, entry: Stats | undefined): Promise<Walked> {
    const dirPath = fdPath(level.handle);
    const real = await readlink(dirPath);
    if (real.endsWith(DELETED)) throw changedError(requested);
    if (!isInside(root, real)) throw outsideError(requested);
    const dirRel = toPosix(path.relative(root, real));
    checkWrite(requested, joinRel(dirRel, name), options);
    return {
      root,
      dir: { path: dirPath, rel: dirRel },
      name,
      entry,
      entryPath: name === undefined ? dirPath : `${dirPath}/${name}`,
      verify: async (handle) => {
        const opened = await readlink(fdPath(handle));
        if (opened.endsWith(DELETED)) throw changedError(requested);
        if (!isInside(root, opened)) throw outsideError(requested);
        checkWrite(requested, toPosix(path.relative(root, opened)), options);
        return opened;
      },
      close: () => closeFrom(0),
    };
  }
}

/** Opens a folder component (O_NOFOLLOW), creating it when asked; 'symlink' when it is one. */
async function openFolder(
  entryPath: string,
  requested: string,
  isLast: boolean,
  create = false,
): Promise<FileHandle | 'symlink'> {
  try {
    return await open(entryPath, DIR_FLAGS);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOTDIR' || code === 'ELOOP') {
      const entry = await lstatOrMissing(entryPath);
      if (entry?.isSymbolicLink()) return 'symlink';
      if (entry && !entry.isDirectory()) {
        throw new FileToolError(
          'not-directory',
          isLast
            ? `${requested} is a file, not a folder`
            : `${requested}: a part of the path is a file, not a directory`,
          { cause: err },
        );
      }
      throw changedError(requested);
    }
    if (code !== 'ENOENT' || !create) throw err;
  }
  try {
    await mkdir(entryPath);
  } catch (err) {
    if (errnoOf(err) !== 'EEXIST') throw err; // made meanwhile: opened below like any folder
  }
  try {
    return await open(entryPath, DIR_FLAGS);
  } catch (err) {
    throw errnoOf(err) === 'ENOTDIR' || errnoOf(err) === 'ELOOP' ? changedError(requested) : err;
  }
}

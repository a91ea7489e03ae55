/**
 * The file tools' fallback confinement where descriptor-relative opening
 * (Linux's /proc/self/fd) is not available: resolve by real path, then let
 * `verify` compare the opened descriptor's dev and inode with the name's and
 * re-check its real path. Narrows the check-to-use race; does not close it.
 */
import { mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import {
  changedError,
  checkWrite,
  errnoOf,
  FileToolError,
  isInside,
  lstatOrMissing,
  outsideError,
  resolveInWorkspace,
  toPosix,
} from './workspace-path.js';
import type { Walked, WalkOptions } from './workspace-walk-types.js';

/** walkInWorkspace by real path: the folder and entry `requested` resolves to, checked by name. */
export async function walkPortable(
  root: string,
  configured: string,
  requested: string,
  options: WalkOptions,
): Promise<Walked> {
  const real = await resolveInWorkspace(configured, requested);
  const realRel = toPosix(path.relative(root, real));
  checkWrite(requested, realRel, options);
  const atRoot = real === root || options.want === 'dir';
  const dirPath = atRoot ? real : path.dirname(real);
  const name = atRoot ? undefined : path.basename(real);
  if (options.createParents) {
    await mkdir(dirPath, { recursive: true }).catch((err: unknown) => {
      if (errnoOf(err) !== 'EEXIST' && errnoOf(err) !== 'ENOTDIR') throw err;
      throw new FileToolError(
        'not-directory',
        `${requested}: a part of the path is a file, not a directory`,
        {
          cause: err,
        },
      );
    });
    if ((await realpath(dirPath)) !== dirPath) throw changedError(requested);
  }
  const entry = name === undefined ? undefined : await lstatOrMissing(real);
  if (entry?.isSymbolicLink()) throw changedError(requested);
  if (options.want === 'dir') {
    const st = await lstatOrMissing(real);
    if (!st) throw new FileToolError('missing', `folder not found: ${requested}`);
    if (!st.isDirectory()) throw new FileToolError('not-directory', `${requested} is a file, not a folder`);
  }
  return {
    root,
    dir: { path: dirPath, rel: atRoot ? realRel : toPosix(path.relative(root, dirPath)) },
    name,
    entry,
    entryPath: real,
    verify: async (handle, other) => {
      const byName = other === undefined ? real : path.join(dirPath, other);
      const [opened, named] = await Promise.all([handle.stat(), lstatOrMissing(byName)]);
      if (!named || opened.dev !== named.dev || opened.ino !== named.ino) throw changedError(requested);
      const now = await realpath(byName);
      if (!isInside(root, now)) throw outsideError(requested);
      checkWrite(requested, toPosix(path.relative(root, now)), options);
      return now;
    },
    close: async () => undefined,
  };
}

/**
 * Node's on-disk compile cache (Node 22.1+), in a folder only this user can
 * write. Node's default, `<tmpdir>/node-compile-cache`, is created by whoever
 * comes first: on a shared host another user could make it and put compiled
 * code there for magpie to run. Ours is `<tmpdir>/magpie-compile-cache-<uid>`,
 * made 0700 and used only when it is a real folder owned by this user that no
 * one else can write; otherwise magpie starts without the cache (slower, not wrong).
 */
import { lstatSync, mkdirSync } from 'node:fs';
import nodeModule from 'node:module';
import os from 'node:os';
import path from 'node:path';

/** The cache folder when it is safe to use, else undefined. */
export function privateCacheDir(base = os.tmpdir()): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  const dir = path.join(base, `magpie-compile-cache-${uid}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return undefined;
  }
  try {
    const stat = lstatSync(dir);
    if (!stat.isDirectory() || stat.uid !== uid || (stat.mode & 0o077) !== 0) return undefined;
  } catch {
    return undefined;
  }
  return dir;
}

/** Turns the compile cache on in the private folder; a no-op where Node or the folder does not allow it. */
export function enablePrivateCompileCache(): void {
  if (!nodeModule.enableCompileCache) return;
  const dir = privateCacheDir();
  if (dir) nodeModule.enableCompileCache(dir);
}

/**
 * The types of a confined walk (workspace-walk.ts), apart so that the
 * portable walk (workspace-walk-portable.ts) and the Linux one share them
 * without importing each other.
 */
import type { Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';

export interface WalkOptions {
  /** Create missing folders on the way. @defaultValue false */
  createParents?: boolean;
  /** The entry will be changed: protected folders and the workspace itself are refused. @defaultValue false */
  forWrite?: boolean;
  /** `dir`: the path must be a folder, which becomes `dir` (`name` is undefined). @defaultValue 'entry' */
  want?: 'entry' | 'dir';
}

/** A folder reached by the walk; `path` names this very folder (`/proc/self/fd/N` on Linux). */
export interface WalkedDir {
  readonly path: string;
  /** Its path relative to the workspace root, '/'-separated; '' for the root. */
  readonly rel: string;
}

/** Where a walk ended: a verified folder and the name of the entry in it. */
export interface Walked {
  /** The workspace's real path. */
  readonly root: string;
  readonly dir: WalkedDir;
  /** The entry in `dir`; undefined when the walk ended at `dir` itself. */
  readonly name: string | undefined;
  /** lstat of the entry (never a symlink); undefined when it does not exist. */
  readonly entry: Stats | undefined;
  /** `dir.path` joined with `name`: the name to open the entry by. */
  readonly entryPath: string;
  /**
   * Checks that an open descriptor of the entry (or of `name` in `dir`)
   * lies in the workspace (and, for a write, outside the protected folders);
   * returns its real path.
   * @throws FileToolError 'outside', 'protected' or 'changed'.
   */
  verify(handle: FileHandle, name?: string): Promise<string>;
  /** Closes the descriptors the walk holds. */
  close(): Promise<void>;
}

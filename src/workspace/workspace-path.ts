/**
 * What a path a tool was given may name: lexical checks (NUL bytes, `../`,
 * absolute paths outside the workspace), the folders the tools may read but
 * never change (`sessions/`, a legacy `.redis/`), and the one-line errors the
 * model reads, with the small checks the walks share. Opening a path safely
 * is workspace-walk.ts's job; `resolveInWorkspace` here checks by name only
 * (exec's working folder, and the portable fallback).
 */
import type { Stats } from 'node:fs';
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { AppError, type ErrorCode } from '../errors/index.js';

/** Why a file tool refused or failed; lets a tool phrase its own message for a case. */
export type FileRefusal =
  | 'outside'
  | 'protected'
  | 'directory'
  | 'not-directory'
  | 'not-regular'
  | 'hardlinked'
  | 'changed'
  | 'missing'
  | 'too-large'
  | 'loop';

/** A file tool's refusal, phrased for the model; `reason` says which case it is. */
export class FileToolError extends AppError {
  readonly reason: FileRefusal;
  constructor(reason: FileRefusal, message: string, options: { cause?: unknown; code?: ErrorCode } = {}) {
    super(options.code ?? (reason === 'missing' ? 'NOT_FOUND' : 'TOOL_FAILED'), message, {
      cause: options.cause,
    });
    this.reason = reason;
  }
}

/** MEMORY.md's history (a bare git repository, src/memory/history/). */
export const MEMORY_HISTORY_DIR = '.memory-history';

/**
 * Top-level entries of the workspace the tools may read but never change:
 * `sessions/` (every chat's history), `.redis/` (where older versions kept
 * the private Redis's data), `.memory-history/` (MEMORY.md's history: its
 * git config could otherwise name programs for git to run) and the file
 * `.magpie-id` (the workspace's identity, see identity.ts). Compared without regard to case, so a
 * case-insensitive file system cannot be used to spell around it.
 */
export const PROTECTED_FOLDERS: readonly string[] = Object.freeze([
  'sessions',
  '.redis',
  MEMORY_HISTORY_DIR,
  '.magpie-id',
]);

/** The protected entries that are files, not folders. */
const PROTECTED_FILES: ReadonlySet<string> = new Set(['.magpie-id']);

/** The protected folder `rel` (a '/'-separated path relative to the workspace) lies in, if any. */
export function protectedFolder(rel: string): string | undefined {
  const first = rel.split('/', 1)[0]?.toLowerCase() ?? '';
  return PROTECTED_FOLDERS.find((folder) => folder === first);
}

/** The refusal for a change under a protected folder. */
export function protectedError(requested: string, folder: string): FileToolError {
  return new FileToolError(
    'protected',
    PROTECTED_FILES.has(folder)
      ? `path "${requested}" is ${folder}, which the tools may read but not change`
      : `path "${requested}" is in ${folder}/, which the tools may read but not change`,
  );
}

/** True when `child` is `parent` or lies beneath it (both absolute, normalised). */
export function isInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/** The refusal for a path that leads out of the workspace. */
export function outsideError(requested: string): FileToolError {
  return new FileToolError(
    'outside',
    `path "${requested}" is outside the workspace; use a path inside the workspace (relative paths are resolved from it)`,
  );
}

/** The `code` of a Node fs error (ENOENT, ELOOP, …), if it has one. */
export function errnoOf(err: unknown): string | undefined {
  return err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

/** The real path of the workspace, or WORKSPACE_MISSING. */
export async function realWorkspace(workspace: string): Promise<string> {
  try {
    return await realpath(workspace);
  } catch (err) {
    throw new AppError('WORKSPACE_MISSING', `workspace ${workspace} does not exist`, { cause: err });
  }
}

/**
 * `requested` as a '/'-separated path relative to the workspace root ('' for
 * the root itself), with `.` and `..` folded lexically. An absolute path must
 * lie in the workspace, spelled through its real path or its configured one.
 *
 * @param root the workspace's real path
 * @param configured the workspace path as configured (may go through a symlink)
 * @throws FileToolError 'outside' for `../` escapes and absolute paths elsewhere; AppError for a NUL byte.
 */
export function relativeInWorkspace(root: string, configured: string, requested: string): string {
  if (requested.includes('\0')) throw new AppError('TOOL_FAILED', 'path contains a NUL byte');
  const given = requested.trim() === '' ? '.' : requested;
  let absolute = path.resolve(root, given);
  const configuredAbs = path.resolve(configured);
  if (path.isAbsolute(given) && !isInside(root, absolute) && isInside(configuredAbs, absolute)) {
    absolute = path.join(root, path.relative(configuredAbs, absolute));
  }
  if (!isInside(root, absolute)) throw outsideError(requested);
  return path.relative(root, absolute).split(path.sep).join('/');
}

/**
 * Real path of `target`, which may not exist yet: the nearest existing
 * ancestor is resolved and the missing tail appended. A dangling symlink on
 * the way is refused (writing through it could land anywhere).
 */
async function realPathOrAncestor(target: string, requested: string): Promise<string> {
  const tail: string[] = [];
  let current = target;
  for (;;) {
    try {
      const real = await realpath(current);
      return tail.length === 0 ? real : path.join(real, ...tail.reverse());
    } catch (err) {
      if (errnoOf(err) === 'ELOOP') {
        throw new FileToolError('loop', `path "${requested}" goes through too many symbolic links`, {
          cause: err,
        });
      }
      if (errnoOf(err) !== 'ENOENT' && errnoOf(err) !== 'ENOTDIR') {
        throw new AppError('TOOL_FAILED', `cannot resolve path "${requested}": ${errnoOf(err) ?? 'error'}`, {
          cause: err,
        });
      }
      const isDanglingLink = await lstat(current).then(
        (st) => st.isSymbolicLink(),
        () => false, // nothing at all there: a plain missing path
      );
      if (isDanglingLink) {
        throw new FileToolError(
          'changed',
          `path "${requested}" goes through a symbolic link to a missing target`,
        );
      }
      const parent = path.dirname(current);
      if (parent === current) throw outsideError(requested);
      tail.push(path.basename(current));
      current = parent;
    }
  }
}

/**
 * Resolves `requested` (relative to the workspace, or absolute inside it) to
 * a real absolute path inside the workspace, by name: a check, not a handle.
 * The file tools open through workspace-walk.ts instead; this serves exec's
 * working folder and the portable (non-Linux) fallback.
 *
 * @throws AppError TOOL_FAILED when the path leads outside the workspace (by
 *   `../`, an absolute path or a symlink), WORKSPACE_MISSING when the
 *   workspace does not exist.
 */
export async function resolveInWorkspace(workspace: string, requested: string): Promise<string> {
  const root = await realWorkspace(workspace);
  const rel = relativeInWorkspace(root, workspace, requested);
  const real = await realPathOrAncestor(path.join(root, rel), requested);
  if (!isInside(root, real)) throw outsideError(requested);
  return real;
}

/** The refusal for a path that changed under the walk (a race, or a folder deleted meanwhile). */
export function changedError(requested: string): FileToolError {
  return new FileToolError('changed', `path "${requested}" changed while it was being opened; try again`);
}

/** lstat, or undefined when nothing is there. */
export async function lstatOrMissing(file: string): Promise<Stats | undefined> {
  try {
    return await lstat(file);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/** A relative path with '/' separators, whatever the platform's. */
export const toPosix = (rel: string): string => rel.split(path.sep).join('/');

/** Refuses a write into a protected folder, or onto the workspace itself. */
export function checkWrite(
  requested: string,
  rel: string,
  options: { forWrite?: boolean; want?: 'entry' | 'dir' },
): void {
  if (!options.forWrite) return;
  const folder = protectedFolder(rel);
  if (folder) throw protectedError(requested, folder);
  if (rel === '' && options.want !== 'dir') {
    throw new FileToolError(
      'directory',
      `path "${requested}" is the workspace directory itself; name a file`,
    );
  }
}

/** Converts fs errors (ENOENT, EISDIR, …) into one-line tool errors; AppErrors pass through. */
export function fileError(err: unknown, shown: string): AppError {
  if (err instanceof AppError) return err;
  switch (errnoOf(err)) {
    case 'ENOENT':
      return new FileToolError('missing', `file not found: ${shown}`, { cause: err });
    case 'EISDIR':
      return new FileToolError('directory', `${shown} is a directory, not a file`, { cause: err });
    case 'ENOTDIR':
      return new FileToolError('not-directory', `${shown}: a part of the path is a file, not a directory`, {
        cause: err,
      });
    case 'ELOOP':
      return new FileToolError('loop', `${shown}: too many symbolic links`, { cause: err });
    case 'EACCES':
    case 'EPERM':
      return new AppError('TOOL_FAILED', `permission denied: ${shown}`, { cause: err });
    case 'ENAMETOOLONG':
      return new AppError('TOOL_FAILED', `${shown}: the name is too long`, { cause: err });
    default:
      return new AppError('TOOL_FAILED', `${shown}: ${errnoOf(err) ?? String(err)}`, { cause: err });
  }
}

/**
 * Confines a path a tool was given to the workspace. Symlinks are resolved
 * (realpath), also for a file that does not exist yet (through its nearest
 * existing ancestor), so neither `../`, an absolute path nor a symlink can
 * lead out. Errors are one line the model can act on.
 */
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../errors/index.js';

export interface ResolveOptions {
  /**
   * The path will be written: the workspace directory itself is refused.
   * @defaultValue false
   */
  forWrite?: boolean;
}

/** True when `child` is `parent` or lies beneath it (both absolute, normalised). */
export function isInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

function outside(requested: string): AppError {
  return new AppError(
    'TOOL_FAILED',
    `path "${requested}" is outside the workspace; use a path inside the workspace (relative paths are resolved from it)`,
  );
}

function errnoOf(err: unknown): string | undefined {
  return err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

/** The real path of the workspace, or WORKSPACE_MISSING. */
async function realWorkspace(workspace: string): Promise<string> {
  try {
    return await realpath(workspace);
  } catch (err) {
    throw new AppError('WORKSPACE_MISSING', `workspace ${workspace} does not exist`, { cause: err });
  }
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
        throw new AppError(
          'TOOL_FAILED',
          `path "${requested}" goes through a symbolic link to a missing target`,
        );
      }
      const parent = path.dirname(current);
      if (parent === current) throw outside(requested);
      tail.push(path.basename(current));
      current = parent;
    }
  }
}

/**
 * Resolves `requested` (relative to the workspace, or absolute inside it) to
 * a real absolute path inside the workspace.
 *
 * @throws AppError TOOL_FAILED when the path leads outside the workspace (by
 *   `../`, an absolute path or a symlink), WORKSPACE_MISSING when the
 *   workspace does not exist.
 */
export async function resolveInWorkspace(
  workspace: string,
  requested: string,
  options: ResolveOptions = {},
): Promise<string> {
  if (requested.includes('\0')) throw new AppError('TOOL_FAILED', 'path contains a NUL byte');
  const root = await realWorkspace(workspace);
  const given = requested.trim() === '' ? '.' : requested;
  // An absolute path spelled through the configured (possibly symlinked) workspace path is inside too.
  const configured = path.resolve(workspace);
  let lexical = path.resolve(root, given);
  if (path.isAbsolute(given) && isInside(configured, lexical) && !isInside(root, lexical)) {
    lexical = path.join(root, path.relative(configured, lexical));
  }
  if (!isInside(root, lexical)) throw outside(requested);
  const real = await realPathOrAncestor(lexical, requested);
  if (!isInside(root, real)) throw outside(requested);
  if (options.forWrite && real === root) {
    throw new AppError('TOOL_FAILED', `path "${requested}" is the workspace directory itself; name a file`);
  }
  return real;
}

/** Converts fs errors (ENOENT, EISDIR, …) into one-line tool errors; AppErrors pass through. */
export function fileError(err: unknown, shown: string): AppError {
  if (err instanceof AppError) return err;
  switch (errnoOf(err)) {
    case 'ENOENT':
      return new AppError('NOT_FOUND', `file not found: ${shown}`, { cause: err });
    case 'EISDIR':
      return new AppError('TOOL_FAILED', `${shown} is a directory, not a file`, { cause: err });
    case 'ENOTDIR':
      return new AppError('TOOL_FAILED', `${shown}: a part of the path is a file, not a directory`, {
        cause: err,
      });
    case 'EACCES':
    case 'EPERM':
      return new AppError('TOOL_FAILED', `permission denied: ${shown}`, { cause: err });
    default:
      return new AppError('TOOL_FAILED', `${shown}: ${errnoOf(err) ?? String(err)}`, { cause: err });
  }
}

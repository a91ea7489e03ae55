/**
 * The file operations behind read_file, write_file, edit_file, append_file
 * and list_dir. Each walks to its folder through workspace-walk.ts, refuses
 * anything but a regular file with one link (checked with lstat before
 * opening, and with fstat after), opens with O_NOFOLLOW | O_NONBLOCK (a FIFO
 * can never block a thread), and checks what it opened before using it.
 * Replacing a file writes a temp file (O_CREAT | O_EXCL) in the same held
 * folder and renames it there, so a write cannot be redirected either.
 */
import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { type FileHandle, open, readdir, rename, unlink } from 'node:fs/promises';
import { AppError, describeError } from '../errors/index.js';
import { changedError, errnoOf, FileToolError } from './workspace-path.js';
import { type Confinement, type Walked, type WalkOptions, walkInWorkspace } from './workspace-walk.js';

export interface WorkspaceFilesOptions {
  /** The workspace folder every operation is confined to. */
  workspace: string;
  /** How paths are confined; `auto` is descriptor-relative on Linux. @defaultValue 'auto' */
  confinement?: Confinement;
}

/** One entry of a folder listing. */
export interface ListedEntry {
  name: string;
  /** A folder, or a symlink to a folder inside the workspace. */
  isDir: boolean;
}

const { O_RDONLY, O_WRONLY, O_APPEND, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;
const O_NOCTTY = constants.O_NOCTTY ?? 0;
const READ_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
const APPEND_FLAGS = O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
const TEMP_FLAGS = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY;

/** Bytes as `12.3 MB`. */
export const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

function describeKind(st: Stats): string {
  if (st.isFIFO()) return 'a named pipe (FIFO)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/**
 * Refuses anything but a regular file with a single link.
 * @throws FileToolError 'directory', 'not-regular' or 'hardlinked'.
 */
export function checkRegularFile(requested: string, st: Stats): void {
  if (st.isDirectory()) throw new FileToolError('directory', `${requested} is a directory, not a file`);
  if (!st.isFile()) {
    throw new FileToolError(
      'not-regular',
      `${requested} is ${describeKind(st)}; the file tools open only regular files and folders`,
    );
  }
  if (st.nlink > 1) {
    throw new FileToolError(
      'hardlinked',
      `${requested} has ${st.nlink} hard links; the file tools refuse hard-linked files (another name may lie outside the workspace)`,
    );
  }
}

/** Checks an opened descriptor: a regular single-link file, the same one lstat saw (when it saw one). */
async function checkOpened(requested: string, handle: FileHandle, seen: Stats | undefined): Promise<Stats> {
  const st = await handle.stat();
  checkRegularFile(requested, st);
  if (seen && (st.dev !== seen.dev || st.ino !== seen.ino)) throw changedError(requested);
  return st;
}

/** Opens `file` with `flags`; a symlink swapped in meanwhile (ELOOP) is reported as a change. */
async function openNoFollow(
  file: string,
  flags: number,
  requested: string,
  mode?: number,
): Promise<FileHandle> {
  try {
    return await open(file, flags, mode);
  } catch (err) {
    throw errnoOf(err) === 'ELOOP' ? changedError(requested) : err;
  }
}

/** Reads the whole of an open file, at most `max` bytes (a file growing meanwhile is cut there). */
export async function readUpTo(handle: FileHandle, max: number): Promise<Buffer> {
  const buffer = Buffer.alloc(max);
  let filled = 0;
  while (filled < max) {
    const { bytesRead } = await handle.read(buffer, filled, max - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

/** The workspace's files, reached only through verified descriptors. Build one per tool or share it. */
export class WorkspaceFiles {
  readonly workspace: string;
  readonly confinement: Confinement;

  constructor(options: WorkspaceFilesOptions) {
    this.workspace = options.workspace;
    this.confinement = options.confinement ?? 'auto';
  }

  private walk(requested: string, options: WalkOptions): Promise<Walked> {
    return walkInWorkspace(this.workspace, requested, this.confinement, options);
  }

  /**
   * Opens a regular file for reading and hands `use` the checked descriptor
   * and its fstat; closes it afterwards.
   * @throws FileToolError or an fs error (see {@link fileError}).
   */
  async read<T>(requested: string, use: (handle: FileHandle, st: Stats) => Promise<T>): Promise<T> {
    const walked = await this.walk(requested, {});
    try {
      return await this.readWalked(walked, requested, use);
    } finally {
      await walked.close();
    }
  }

  private async readWalked<T>(
    walked: Walked,
    requested: string,
    use: (handle: FileHandle, st: Stats) => Promise<T>,
  ): Promise<T> {
    if (walked.name === undefined)
      throw new FileToolError('directory', `${requested} is a directory, not a file`);
    if (!walked.entry) throw new FileToolError('missing', `file not found: ${requested}`);
    checkRegularFile(requested, walked.entry);
    const handle = await openNoFollow(walked.entryPath, READ_FLAGS, requested);
    try {
      const st = await checkOpened(requested, handle, walked.entry);
      await walked.verify(handle);
      return await use(handle, st);
    } finally {
      await handle.close();
    }
  }

  /**
   * Creates or replaces a file atomically: a temp file in the same held
   * folder, renamed over the name. `next` is the new text, or (edit) a
   * function of the current text, which must exist and be at most
   * `maxBytes`. An existing file keeps its permission bits.
   */
  async replace(
    requested: string,
    next: string | ((current: string) => string),
    maxBytes = 10 * 1024 * 1024,
  ): Promise<void> {
    const editing = typeof next === 'function';
    const walked = await this.walk(requested, { forWrite: true, createParents: !editing });
    try {
      const { entry, name, dir } = walked;
      if (name === undefined) throw new FileToolError('directory', `${requested} is a directory, not a file`);
      if (entry) checkRegularFile(requested, entry);
      let content: string;
      if (editing) {
        if (!entry) throw new FileToolError('missing', `file not found: ${requested}`);
        const current = await this.readWalked(walked, requested, async (handle, st) => {
          if (st.size > maxBytes) {
            throw new FileToolError(
              'too-large',
              `${requested} is ${mib(st.size)}, over the ${mib(maxBytes)} limit for editing; use exec to change it`,
            );
          }
          return (await readUpTo(handle, st.size)).toString('utf8');
        });
        content = next(current);
      } else {
        content = next;
      }
      const temp = `.${name.slice(0, 200)}.${randomBytes(6).toString('hex')}.tmp`;
      const tempPath = `${dir.path}/${temp}`;
      const handle = await openNoFollow(tempPath, TEMP_FLAGS, requested, 0o666);
      try {
        try {
          if (entry) await handle.chmod(entry.mode & 0o7777);
          await handle.writeFile(content, 'utf8');
          // Checked last, right before the rename: the folder we hold is still inside.
          await walked.verify(handle, temp);
        } finally {
          await handle.close();
        }
        await rename(tempPath, walked.entryPath);
      } catch (err) {
        await removeTemp(tempPath, err);
        throw err;
      }
    } finally {
      await walked.close();
    }
  }

  /** Appends `content` to a regular file, creating it (and its folders) when missing. */
  async append(requested: string, content: string): Promise<void> {
    const walked = await this.walk(requested, { forWrite: true, createParents: true });
    try {
      if (walked.name === undefined)
        throw new FileToolError('directory', `${requested} is a directory, not a file`);
      if (walked.entry) checkRegularFile(requested, walked.entry);
      const handle = await openNoFollow(walked.entryPath, APPEND_FLAGS, requested, 0o666);
      try {
        await checkOpened(requested, handle, walked.entry);
        await walked.verify(handle);
        await handle.appendFile(content, 'utf8');
      } finally {
        await handle.close();
      }
    } finally {
      await walked.close();
    }
  }

  /**
   * The entries of a folder sorted by name: the first `limit` of them, with
   * symlinks to folders inside the workspace marked as folders, and the total.
   */
  async list(requested: string, limit: number): Promise<{ entries: ListedEntry[]; total: number }> {
    const walked = await this.walk(requested, { want: 'dir' });
    try {
      const dirents = await readdir(walked.dir.path, { withFileTypes: true });
      dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const shown = dirents.slice(0, limit);
      const entries = await Promise.all(
        shown.map(async (dirent) => ({
          name: dirent.name,
          isDir:
            dirent.isDirectory() ||
            (dirent.isSymbolicLink() && (await this.isFolderInside(walked.dir.rel, dirent.name))),
        })),
      );
      return { entries, total: dirents.length };
    } finally {
      await walked.close();
    }
  }

  /** Whether a symlink in `dirRel` leads to a folder inside the workspace. */
  private async isFolderInside(dirRel: string, name: string): Promise<boolean> {
    const rel = dirRel === '' ? name : `${dirRel}/${name}`;
    try {
      const walked = await this.walk(rel, {});
      await walked.close();
      return walked.name === undefined || walked.entry?.isDirectory() === true;
    } catch (err) {
      if (err instanceof AppError || errnoOf(err) !== undefined) return false; // dangling or leading out: a plain entry
      throw err;
    }
  }
}

/** Removes a temp file after a failed write; a failure to remove is reported with the write's error as cause. */
async function removeTemp(tempPath: string, cause: unknown): Promise<void> {
  try {
    await unlink(tempPath);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return;
    throw new AppError('TOOL_FAILED', `could not remove temp file ${tempPath}: ${describeError(err)}`, {
      cause,
    });
  }
}

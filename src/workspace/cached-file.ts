/**
 * Reads workspace files through a small cache keyed by path, mtime, size and
 * inode, so the system prompt re-reads a file only when it has changed.
 * The freshness check is a synchronous stat: on a local file it costs a few
 * microseconds, where the promise form costs a thread-pool round trip and
 * far more CPU, about ten times a turn.
 *
 * The read itself goes through {@link WorkspaceFiles}, exactly as the file
 * tools' reads do: a prompt file that is a symlink leading out of the
 * workspace, a hard link, a FIFO or a device is treated as absent. Without
 * that, a command could plant `USER.md -> ../.env` and have the next turn's
 * system prompt carry the host's secrets to the model.
 */
import { type Stats, statSync } from 'node:fs';
import path from 'node:path';
import { readUpTo, WorkspaceFiles } from './workspace-files.js';
import { FileToolError } from './workspace-path.js';

interface Entry {
  mtimeMs: number;
  size: number;
  ino: number;
  text: string;
}

export interface CachedFileReaderOptions {
  /** The workspace every file read lies in; anything that leads out of it reads as absent. */
  workspace: string;
  /** Bytes read of one file at most (the prompt caps files far below this). @defaultValue 10 MiB */
  maxBytes?: number;
  /** Told the workspace-relative path and the reason when a file is refused (a symlink out, a hard link, a FIFO). */
  onRefused?: (file: string, reason: string) => void;
}

/**
 * A per-owner cache of text files (build one per ContextBuilder or MemoryStore;
 * there is no shared instance).
 */
export class CachedFileReader {
  private readonly entries = new Map<string, Entry>();
  private readonly files: WorkspaceFiles;
  private readonly workspace: string;
  private readonly maxBytes: number;
  private readonly onRefused: ((file: string, reason: string) => void) | undefined;
  /** How many times a file was actually read from disk (for tests and metrics). */
  reads = 0;

  constructor(options: CachedFileReaderOptions) {
    this.workspace = path.resolve(options.workspace);
    this.files = new WorkspaceFiles({ workspace: this.workspace });
    this.maxBytes = options.maxBytes ?? 10 * 1024 * 1024;
    this.onRefused = options.onRefused;
  }

  /**
   * The file's text, or undefined when it does not exist or may not be read
   * (outside the workspace, a symlink leading out, a hard link, not a
   * regular file). Other errors are thrown.
   */
  async read(file: string): Promise<string | undefined> {
    let info: Stats;
    try {
      info = statSync(file);
    } catch (err) {
      if (isMissing(err)) {
        this.entries.delete(file);
        return undefined;
      }
      throw err;
    }
    if (!info.isFile()) return undefined;
    const cached = this.entries.get(file);
    if (cached && cached.mtimeMs === info.mtimeMs && cached.size === info.size && cached.ino === info.ino) {
      return cached.text;
    }
    this.entries.delete(file);
    const relative = path.relative(this.workspace, path.resolve(file));
    let read: { text: string; st: Stats };
    try {
      read = await this.files.read(relative, async (handle, st) => ({
        text: (await readUpTo(handle, Math.min(st.size, this.maxBytes))).toString('utf8'),
        st,
      }));
    } catch (err) {
      if (isMissing(err)) return undefined;
      if (err instanceof FileToolError) {
        if (err.reason !== 'missing') this.onRefused?.(relative, err.message);
        return undefined;
      }
      throw err;
    }
    this.reads += 1;
    // Keyed by what was opened, so a file swapped after the stat is read again next time.
    this.entries.set(file, {
      mtimeMs: read.st.mtimeMs,
      size: read.st.size,
      ino: read.st.ino,
      text: read.text,
    });
    return read.text;
  }
}

/** True for "no such file or directory" (and "not a directory" on a path prefix). */
export function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

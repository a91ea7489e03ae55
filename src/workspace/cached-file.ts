/**
 * Reads workspace files through a small cache keyed by path, mtime, size and
 * inode, so the system prompt re-reads a file only when it has changed.
 * The freshness check is a synchronous stat: on a local file it costs a few
 * microseconds, where the promise form costs a thread-pool round trip and
 * far more CPU, about ten times a turn.
 */
import { type Stats, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

interface Entry {
  mtimeMs: number;
  size: number;
  ino: number;
  text: string;
}

/**
 * A per-owner cache of text files (build one per ContextBuilder or MemoryStore;
 * there is no shared instance).
 */
export class CachedFileReader {
  private readonly entries = new Map<string, Entry>();
  /** How many times a file was actually read from disk (for tests and metrics). */
  reads = 0;

  /** The file's text, or undefined when it does not exist. Other errors are thrown. */
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
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
    this.reads += 1;
    this.entries.set(file, { mtimeMs: info.mtimeMs, size: info.size, ino: info.ino, text });
    return text;
  }
}

/** True for "no such file or directory" (and "not a directory" on a path prefix). */
export function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

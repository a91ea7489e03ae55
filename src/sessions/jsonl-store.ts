/**
 * SessionStore on disk: `<dir>/<name>.jsonl`, one JSON message per line,
 * only ever appended to, with `<name>.summary.json` beside it.
 */
import { mkdir, open, readdir, readFile, rename, stat } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../errors/index.js';
import { type Logger, silentLogger } from '../log/index.js';
import type { ChatMessage } from '../providers/types.js';
import { writeFileAtomic } from '../workspace/atomic-write.js';
import { isMissing } from '../workspace/cached-file.js';
import { sanitizeHistory } from './history.js';
import { sessionFileName, sessionKeyFromFileName } from './session-key.js';
import type { SessionEntry, SessionInfo, SessionStore } from './types.js';

export interface JsonlSessionStoreOptions {
  /** The folder holding the session files (normally `<workspace>/sessions`); created on first write. */
  dir: string;
  /** Warnings about corrupt lines go here. @defaultValue a silent logger */
  logger?: Logger;
}

/** What `<name>.summary.json` holds. */
interface SummaryFile {
  summary: string;
  /** Index into getHistory of the first message not covered by the summary. */
  keepFrom: number;
  updatedAt: string;
}

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);

/**
 * The JSONL session store. Writes to one session are serialised in this
 * process (a promise chain per key), so concurrent appends never interleave
 * partial lines. Appending opens the file in append mode: its cost does not
 * depend on how long the session is.
 */
export class JsonlSessionStore implements SessionStore {
  readonly dir: string;
  private readonly logger: Logger;
  private readonly chains = new Map<string, Promise<unknown>>();
  /** Summary reads in flight per session: a turn asks for the summary twice at once (history and prompt). */
  private readonly summaryReads = new Map<string, Promise<SummaryFile | undefined>>();
  /** Whether `dir` was made (or found) once; a missing folder later is made again on ENOENT. */
  private dirReady = false;

  constructor(options: JsonlSessionStoreOptions) {
    if (!options.dir) throw new AppError('INTERNAL', 'JsonlSessionStore needs a dir');
    this.dir = path.resolve(options.dir);
    this.logger = options.logger ?? silentLogger();
  }

  /** Absolute path of a session's log (validates the key). */
  logPath(key: string): string {
    return path.join(this.dir, `${sessionFileName(key)}.jsonl`);
  }

  private summaryPath(key: string): string {
    return path.join(this.dir, `${sessionFileName(key)}.summary.json`);
  }

  async getHistory(key: string): Promise<SessionEntry[]> {
    const text = await this.readSettled(key, this.logPath(key));
    return text === undefined ? [] : this.parseLines(key, text);
  }

  async getContextHistory(key: string): Promise<SessionEntry[]> {
    const [history, summary] = await Promise.all([this.getHistory(key), this.readSummary(key)]);
    const from = Math.min(summary?.keepFrom ?? 0, history.length);
    return sanitizeHistory(history.slice(from));
  }

  async getSummary(key: string): Promise<string | undefined> {
    const summary = await this.readSummary(key);
    return summary && summary.summary !== '' ? summary.summary : undefined;
  }

  async append(key: string, ...messages: ChatMessage[]): Promise<void> {
    const file = this.logPath(key);
    if (messages.length === 0) return;
    const ts = new Date().toISOString();
    const data = messages.map((m) => `${JSON.stringify({ ...m, ts })}\n`).join('');
    await this.serialise(key, async () => {
      const handle = await this.openForAppend(file);
      try {
        const { size } = await handle.stat();
        let prefix = '';
        if (size > 0) {
          const last = Buffer.alloc(1);
          await handle.read(last, 0, 1, size - 1);
          // A crash left a half-written line: end it so the new lines stay whole (it is skipped on read).
          if (last[0] !== 0x0a) prefix = '\n';
        }
        await handle.write(prefix + data);
      } finally {
        await handle.close();
      }
    });
  }

  async setSummary(key: string, summary: string, keepFrom: number): Promise<void> {
    const file = this.summaryPath(key);
    if (!Number.isInteger(keepFrom) || keepFrom < 0) {
      throw new AppError('INTERNAL', `setSummary: keepFrom must be a whole number ≥ 0, got ${keepFrom}`);
    }
    const body: SummaryFile = { summary, keepFrom, updatedAt: new Date().toISOString() };
    await this.serialise(key, () => writeFileAtomic(file, `${JSON.stringify(body)}\n`));
  }

  async reset(key: string): Promise<string | undefined> {
    const base = sessionFileName(key);
    return this.serialise(key, async () => {
      const log = path.join(this.dir, `${base}.jsonl`);
      const summary = path.join(this.dir, `${base}.summary.json`);
      const stamp = new Date().toISOString().replace(/[-:.]/g, '');
      let archived: string | undefined;
      for (let n = 0; archived === undefined; n += 1) {
        const candidate = `${base}.${stamp}${n === 0 ? '' : `-${n}`}`;
        if (!(await exists(path.join(this.dir, `${candidate}.jsonl`)))) archived = candidate;
      }
      const hadLog = await renameIfExists(log, path.join(this.dir, `${archived}.jsonl`));
      await renameIfExists(summary, path.join(this.dir, `${archived}.summary.json`));
      return hadLog ? `${archived}.jsonl` : undefined;
    });
  }

  async list(): Promise<SessionInfo[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if (isMissing(err)) return [];
      throw err;
    }
    const out: SessionInfo[] = [];
    for (const name of names) {
      const match = /^([^.]+)\.jsonl$/.exec(name);
      const key = match ? sessionKeyFromFileName(match[1]!) : undefined;
      if (key === undefined) continue;
      const file = path.join(this.dir, name);
      try {
        const [info, data] = await Promise.all([stat(file), readFile(file)]);
        let lines = 0;
        for (const byte of data) if (byte === 0x0a) lines += 1;
        if (data.length > 0 && data[data.length - 1] !== 0x0a) lines += 1;
        out.push({ key, messages: lines, bytes: info.size, updatedAt: info.mtime });
      } catch (err) {
        if (!isMissing(err)) throw err;
        // Reset between readdir and stat: the session no longer exists under this name.
      }
    }
    return out.sort((a, b) => b.updatedAt.getTime() - a.updatedAt.getTime());
  }

  private parseLines(key: string, text: string): SessionEntry[] {
    const lines = text.split('\n');
    const endsWithNewline = text.endsWith('\n');
    if (endsWithNewline) lines.pop();
    const out: SessionEntry[] = [];
    lines.forEach((line, index) => {
      if (line.trim() === '') return;
      const entry = parseEntry(line);
      if (entry) {
        out.push(entry);
        return;
      }
      const halfWritten = index === lines.length - 1 && !endsWithNewline;
      this.logger.warn(
        { session: key, line: index + 1 },
        halfWritten ? 'session: half-written last line skipped' : 'session: corrupt line skipped',
      );
    });
    return out;
  }

  /** Opens a session log for appending; the folder is made on first use (and again if it went away). */
  private async openForAppend(file: string): Promise<Awaited<ReturnType<typeof open>>> {
    if (!this.dirReady) {
      await mkdir(this.dir, { recursive: true });
      this.dirReady = true;
    }
    try {
      return await open(file, 'a+');
    } catch (err) {
      if (!isMissing(err)) throw err;
      await mkdir(this.dir, { recursive: true });
      return open(file, 'a+');
    }
  }

  /** The summary file; reads of one session already in flight are shared (writes wait in `settled`). */
  private readSummary(key: string): Promise<SummaryFile | undefined> {
    const running = this.summaryReads.get(key);
    if (running) return running;
    const read = this.readSummaryFile(key).finally(() => {
      if (this.summaryReads.get(key) === read) this.summaryReads.delete(key);
    });
    this.summaryReads.set(key, read);
    return read;
  }

  private async readSummaryFile(key: string): Promise<SummaryFile | undefined> {
    const text = await this.readSettled(key, this.summaryPath(key));
    if (text === undefined) return undefined;
    try {
      const data = JSON.parse(text) as Partial<SummaryFile>;
      if (typeof data.summary === 'string' && Number.isInteger(data.keepFrom) && (data.keepFrom ?? -1) >= 0) {
        return { summary: data.summary, keepFrom: data.keepFrom!, updatedAt: String(data.updatedAt ?? '') };
      }
    } catch (err) {
      this.logger.warn({ session: key, err }, 'session: summary file unreadable, ignored');
      return undefined;
    }
    this.logger.warn({ session: key }, 'session: summary file has the wrong shape, ignored');
    return undefined;
  }

  /** Runs `work` after every earlier write to the same session. */
  private serialise<T>(key: string, work: () => Promise<T>): Promise<T> {
    // A summary read that started before this write must not be shared with readers after it.
    this.summaryReads.delete(key);
    const previous = this.chains.get(key) ?? Promise.resolve();
    const next = previous.then(work, work);
    const tail = next.then(
      () => undefined,
      () => undefined,
    );
    this.chains.set(key, tail);
    void tail.then(() => {
      if (this.chains.get(key) === tail) this.chains.delete(key);
    });
    return next;
  }

  /** A file of the session once its queued writes have finished; undefined when there is none. */
  private async readSettled(key: string, file: string): Promise<string | undefined> {
    await this.settled(key);
    try {
      return await readFile(file, 'utf8');
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  /** Resolves once writes already queued for the session have finished. */
  private async settled(key: string): Promise<void> {
    await this.chains.get(key);
  }
}

function parseEntry(line: string): SessionEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    // Not JSON: the caller logs and skips the line.
    return undefined;
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const role = (value as { role?: unknown }).role;
  if (typeof role !== 'string' || !ROLES.has(role)) return undefined;
  if (role === 'tool' && typeof (value as { toolCallId?: unknown }).toolCallId !== 'string') return undefined;
  return value as SessionEntry;
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch (err) {
    if (isMissing(err)) return false;
    throw err;
  }
}

async function renameIfExists(from: string, to: string): Promise<boolean> {
  try {
    await rename(from, to);
    return true;
  } catch (err) {
    if (isMissing(err)) return false;
    throw err;
  }
}

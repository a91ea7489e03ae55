/**
 * MemoryStore: long-term memory (`memory/MEMORY.md`) and daily notes
 * (`memory/YYYYMM/YYYYMMDD.md`, dated in the configured time zone).
 * The agent edits these with its file tools; this store reads them for the
 * system prompt and offers the same writes to code.
 */
import path from 'node:path';
import { CachedFileReader, isMissing } from '../workspace/cached-file.js';
import { WorkspaceFiles } from '../workspace/workspace-files.js';
import { FileToolError } from '../workspace/workspace-path.js';

export interface MemoryStoreOptions {
  /** Absolute path of the workspace. */
  workspace: string;
  /** IANA time zone that decides what "today" is. @defaultValue the system's time zone */
  timezone?: string;
  /** The clock. @defaultValue `() => new Date()` */
  now?: () => Date;
}

/** A calendar date (no time zone attached). */
export interface CalendarDate {
  year: number;
  month: number;
  day: number;
}

/** Daily notes included in the memory block by default. */
export const DEFAULT_RECENT_DAYS = 3;

/** MEMORY.md and the daily notes of one workspace. */
export class MemoryStore {
  readonly workspace: string;
  readonly memoryDir: string;
  /** `<workspace>/memory/MEMORY.md` */
  readonly longTermPath: string;
  readonly timezone: string;
  private readonly now: () => Date;
  private readonly reader: CachedFileReader;
  private readonly files: WorkspaceFiles;
  private readonly dateFormat: Intl.DateTimeFormat;

  constructor(options: MemoryStoreOptions) {
    this.workspace = path.resolve(options.workspace);
    this.memoryDir = path.join(this.workspace, 'memory');
    this.longTermPath = path.join(this.memoryDir, 'MEMORY.md');
    this.reader = new CachedFileReader({ workspace: this.workspace });
    this.files = new WorkspaceFiles({ workspace: this.workspace });
    this.timezone = options.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
    this.now = options.now ?? (() => new Date());
    // Throws RangeError for an unknown zone, at construction rather than on first use.
    this.dateFormat = new Intl.DateTimeFormat('en-CA', {
      timeZone: this.timezone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    });
  }

  /** Today's date in the store's time zone. */
  today(): CalendarDate {
    const parts = this.dateFormat.formatToParts(this.now());
    const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
    return { year: get('year'), month: get('month'), day: get('day') };
  }

  /** `<workspace>/memory/YYYYMM/YYYYMMDD.md` for today in the configured time zone. */
  todayPath(): string {
    return this.notePath(this.today());
  }

  /** The daily note's path for a date. */
  notePath(date: CalendarDate): string {
    const { yyyy, mm, dd } = pad(date);
    return path.join(this.memoryDir, `${yyyy}${mm}`, `${yyyy}${mm}${dd}.md`);
  }

  /** MEMORY.md's text, '' when it does not exist. */
  async readLongTerm(): Promise<string> {
    return (await this.reader.read(this.longTermPath)) ?? '';
  }

  /** Replaces MEMORY.md atomically. */
  async writeLongTerm(text: string): Promise<void> {
    await this.files.replace(path.relative(this.workspace, this.longTermPath), text);
  }

  /** Today's note, '' when there is none yet. */
  async readToday(): Promise<string> {
    return (await this.reader.read(this.todayPath())) ?? '';
  }

  /** Appends to today's note; a new note starts with `# YYYY-MM-DD`. */
  async appendToday(text: string): Promise<void> {
    const date = this.today();
    const file = path.relative(this.workspace, this.notePath(date));
    const entry = text.endsWith('\n') ? text : `${text}\n`;
    const { yyyy, mm, dd } = pad(date);
    // Through the same confined file operations as the tools: a planted symlink cannot redirect the write.
    const exists = await this.files
      .read(file, async () => true)
      .catch((err: unknown) => {
        if (isMissing(err) || (err instanceof FileToolError && err.reason === 'missing')) return false;
        throw err;
      });
    if (exists) await this.files.append(file, entry);
    else await this.files.replace(file, `# ${yyyy}-${mm}-${dd}\n\n${entry}`);
  }

  /** The notes of the last `days` days (today included), oldest first, separated by rules; '' if none. */
  async getRecentDailyNotes(days = DEFAULT_RECENT_DAYS): Promise<string> {
    const today = this.today();
    const notes: string[] = [];
    for (let back = days - 1; back >= 0; back -= 1) {
      const shifted = new Date(Date.UTC(today.year, today.month - 1, today.day - back));
      const date = {
        year: shifted.getUTCFullYear(),
        month: shifted.getUTCMonth() + 1,
        day: shifted.getUTCDate(),
      };
      const text = await this.reader.read(this.notePath(date));
      if (text !== undefined && hasContent(text)) notes.push(text.trim());
    }
    return notes.join('\n\n---\n\n');
  }

  /** The memory block for the system prompt: long-term memory, then recent notes; '' when both are empty. */
  async getMemoryContext(): Promise<string> {
    const [longTerm, recent] = await Promise.all([this.readLongTerm(), this.getRecentDailyNotes()]);
    const parts: string[] = [];
    if (hasContent(longTerm)) parts.push(`## Long-term memory (memory/MEMORY.md)\n\n${longTerm.trim()}`);
    if (recent !== '') parts.push(`## Recent daily notes\n\n${recent}`);
    return parts.join('\n\n');
  }
}

/**
 * True when a Markdown file says something beyond headings and HTML comments
 * (so a fresh template does not fill the prompt with an empty section).
 */
export function hasContent(markdown: string): boolean {
  return withoutComments(markdown)
    .split('\n')
    .some((line) => line.trim() !== '' && !/^\s{0,3}#{1,6}(\s|$)/.test(line));
}

/**
 * `text` without its closed `<!-- … -->` comments (an unclosed `<!--` stays), in
 * one pass: memory files are written from model output, so no backtracking regex.
 */
function withoutComments(text: string): string {
  const kept: string[] = [];
  let at = 0;
  for (;;) {
    const start = text.indexOf('<!--', at);
    const end = start < 0 ? -1 : text.indexOf('-->', start + 4);
    if (end < 0) break;
    kept.push(text.slice(at, start));
    at = end + 3;
  }
  kept.push(text.slice(at));
  return kept.join('');
}

function pad(date: CalendarDate): { yyyy: string; mm: string; dd: string } {
  return {
    yyyy: String(date.year).padStart(4, '0'),
    mm: String(date.month).padStart(2, '0'),
    dd: String(date.day).padStart(2, '0'),
  };
}

/**
 * Memory as the prompt shows it: MEMORY.md and the daily notes of the last
 * few days, read file by file so that what the model already knows can be
 * told from what was written since. A snapshot goes into the system prompt
 * once per session; later changes travel with the user messages as short
 * notes ("added: …"), so the system prompt's bytes stay put.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { DEFAULT_RECENT_DAYS, hasContent, type MemoryStore } from '../memory/store.js';
import { CachedFileReader } from '../workspace/cached-file.js';

/** One memory file: its path relative to the workspace and its text. */
export interface MemoryFile {
  rel: string;
  text: string;
  /** MEMORY.md, or a daily note. */
  kind: 'long-term' | 'daily';
}

/** How much of each memory file the model has seen: its length and a hash of its text. */
export type MemoryMarks = Record<string, { chars: number; sha: string }>;

export interface MemoryViewOptions {
  memory: MemoryStore;
  /** Daily notes shown: today and the days before it. @defaultValue 3 (DEFAULT_RECENT_DAYS) */
  days?: number;
  /** Longest text of one file in a change note; the rest is left to read_file. @defaultValue 4_000 */
  maxChangeChars?: number;
}

/** Reads the memory files of one workspace (through its own file cache). */
export class MemoryView {
  readonly #memory: MemoryStore;
  readonly #days: number;
  readonly #maxChangeChars: number;
  readonly #reader: CachedFileReader;

  constructor(options: MemoryViewOptions) {
    this.#memory = options.memory;
    this.#reader = new CachedFileReader({ workspace: options.memory.workspace });
    this.#days = options.days ?? DEFAULT_RECENT_DAYS;
    this.#maxChangeChars = options.maxChangeChars ?? 4_000;
    if (!Number.isInteger(this.#days) || this.#days < 1) {
      throw new RangeError(`days must be a positive whole number, got ${options.days}`);
    }
    if (!Number.isInteger(this.#maxChangeChars) || this.#maxChangeChars < 100) {
      throw new RangeError(`maxChangeChars must be a whole number ≥ 100, got ${options.maxChangeChars}`);
    }
  }

  /** MEMORY.md, then the recent daily notes oldest first; files that do not exist are left out. */
  async read(): Promise<MemoryFile[]> {
    const m = this.#memory;
    const today = m.today();
    const notes = [];
    for (let back = this.#days - 1; back >= 0; back -= 1) {
      const day = new Date(Date.UTC(today.year, today.month - 1, today.day - back));
      notes.push(
        m.notePath({ year: day.getUTCFullYear(), month: day.getUTCMonth() + 1, day: day.getUTCDate() }),
      );
    }
    const files = [m.longTermPath, ...notes];
    const texts = await Promise.all(files.map((file) => this.#reader.read(file)));
    const out: MemoryFile[] = [];
    files.forEach((file, i) => {
      const text = texts[i];
      if (text === undefined) return;
      out.push({ rel: relPath(m.workspace, file), text, kind: i === 0 ? 'long-term' : 'daily' });
    });
    return out;
  }

  /** The change note for `files` against what the model knows ('' when nothing new has content). */
  changes(files: readonly MemoryFile[], known: MemoryMarks): string {
    return renderChanges(files, known, this.#maxChangeChars);
  }
}

/** The marks of `files`: what the model knows once it has been shown them. */
export function marksOf(files: readonly MemoryFile[]): MemoryMarks {
  const marks: MemoryMarks = {};
  for (const file of files) marks[file.rel] = { chars: file.text.length, sha: hash(file.text) };
  return marks;
}

/**
 * The memory snapshot for the system prompt: long-term memory, then the recent
 * daily notes; '' when none of them says anything.
 */
export function renderSnapshot(files: readonly MemoryFile[]): string {
  const parts: string[] = [];
  const longTerm = files.find((f) => f.kind === 'long-term');
  if (longTerm && hasContent(longTerm.text)) {
    parts.push(`## Long-term memory (${longTerm.rel})\n\n${longTerm.text.trim()}`);
  }
  const notes = files.filter((f) => f.kind === 'daily' && hasContent(f.text)).map((f) => f.text.trim());
  if (notes.length > 0) parts.push(`## Recent daily notes\n\n${notes.join('\n\n---\n\n')}`);
  return parts.join('\n\n');
}

/**
 * What was written to memory since `known`, one block per file: text added
 * at the end ("added"), a new file ("new"), a rewritten file ("now reads"),
 * or a file emptied or removed. Files still as known, and additions of
 * headings or blank lines only, are left out.
 */
export function renderChanges(files: readonly MemoryFile[], known: MemoryMarks, maxChars: number): string {
  const blocks: string[] = [];
  const present = new Set(files.map((f) => f.rel));
  for (const file of files) {
    const mark = known[file.rel];
    if (mark && mark.chars === file.text.length && mark.sha === hash(file.text)) continue;
    if (!mark) {
      if (hasContent(file.text)) blocks.push(`${file.rel} (new):\n${clip(file.text.trim(), maxChars)}`);
    } else if (file.text.length > mark.chars && hash(file.text.slice(0, mark.chars)) === mark.sha) {
      const added = file.text.slice(mark.chars);
      if (hasContent(added)) blocks.push(`${file.rel} (added):\n${clip(added.trim(), maxChars)}`);
    } else if (hasContent(file.text)) {
      blocks.push(`${file.rel} (rewritten; it now reads):\n${clip(file.text.trim(), maxChars)}`);
    } else {
      blocks.push(`${file.rel} was emptied.`);
    }
  }
  for (const rel of Object.keys(known)) {
    if (!present.has(rel) && rel.endsWith('MEMORY.md')) blocks.push(`${rel} was removed.`);
  }
  return blocks.join('\n\n');
}

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n[… ${text.length - max} more characters: read the file for the rest]`;
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

function relPath(workspace: string, file: string): string {
  return path.relative(workspace, file).split(path.sep).join('/');
}

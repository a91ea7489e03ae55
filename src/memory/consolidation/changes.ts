/**
 * What changed since the last consolidation: the daily notes written since its
 * mark (by mtime), and the conversation lines (user and assistant text, by
 * their `ts`) logged since. Every file is read through the workspace's
 * confined reader, so a note planted as a symlink to a file outside reads as
 * absent. The newest material is kept when there is more than `maxChars`.
 *
 * A time alone cannot tell "just before the mark" from "just after": mtimes
 * come from the kernel's coarse clock (a tick behind), the mark from
 * `Date.now()` (whole milliseconds). So what is within {@link MARK_SLACK_MS}
 * of the mark is told apart by content: the mark keeps a fingerprint of each
 * such note and line it saw, and the next run skips exactly those — a note
 * written in the same millisecond as the run started is neither read twice
 * nor lost.
 */
import { createHash } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { CachedFileReader } from '../../workspace/cached-file.js';

/** What a consolidation reads besides MEMORY.md. */
export interface Changes {
  /** Daily notes and conversation lines as text for the model, oldest first; '' when nothing changed. */
  text: string;
  /** How many notes and conversations contributed. */
  notes: number;
  conversations: number;
  /** Fingerprints of the notes and lines seen that are newer than the new mark less the slack: the next mark's. */
  seen: string[];
}

/** The last consolidation's mark: when it started (ms, 0 before the first) and what it saw near that time. */
export interface ConsolidationMark {
  at: number;
  seen: ReadonlySet<string>;
}

/** How far either side of a mark a time is not trusted to order a write against it. */
export const MARK_SLACK_MS = 2_000;

const NOTE_DIR = /^\d{6}$/;
const NOTE_FILE = /^\d{8}\.md$/;

/**
 * Daily notes and conversation lines written since `since` (at 0: everything), at most
 * `maxChars` of them (the newest kept). `markAt` is the mark the run will leave: what it
 * sees near that time is fingerprinted in {@link Changes.seen}.
 */
export async function changesSince(
  workspace: string,
  since: ConsolidationMark,
  maxChars: number,
  markAt: number,
): Promise<Changes> {
  const reader = new CachedFileReader({ workspace });
  const parts: Array<{ at: number; text: string }> = [];
  const seen: string[] = [];
  /** Whether an item of time `at` is new, noting its fingerprint for the next mark when near `markAt`. */
  const isNew = (at: number, key: string, content: string): boolean => {
    if (since.at > 0 && at <= since.at - MARK_SLACK_MS) return false;
    const print = fingerprint(key, content);
    if (at > markAt - MARK_SLACK_MS) seen.push(print);
    return since.at === 0 || at > since.at + MARK_SLACK_MS || !since.seen.has(print);
  };
  const recent = (at: number | undefined): at is number =>
    at !== undefined && (since.at === 0 || at > since.at - MARK_SLACK_MS);
  let notes = 0;
  let conversations = 0;
  const memoryDir = path.join(workspace, 'memory');
  for (const month of (await names(memoryDir)).filter((n) => NOTE_DIR.test(n))) {
    for (const day of (await names(path.join(memoryDir, month))).filter((n) => NOTE_FILE.test(n))) {
      const file = path.join(memoryDir, month, day);
      const at = await mtimeOf(file);
      if (!recent(at)) continue;
      const text = (await reader.read(file))?.trim();
      if (!text || !isNew(at, `note\0${month}/${day}`, text)) continue;
      notes += 1;
      parts.push({ at, text: `### Daily note memory/${month}/${day}\n\n${text}` });
    }
  }
  const sessionsDir = path.join(workspace, 'sessions');
  for (const log of (await names(sessionsDir)).filter((n) => n.endsWith('.jsonl'))) {
    const file = path.join(sessionsDir, log);
    const at = await mtimeOf(file);
    if (!recent(at)) continue;
    const lines = conversationLines(await reader.read(file), (ts, line) => isNew(ts, `line\0${log}`, line));
    if (lines.length === 0) continue;
    conversations += 1;
    parts.push({ at, text: `### Conversation ${log.slice(0, -'.jsonl'.length)}\n\n${lines.join('\n')}` });
  }
  parts.sort((a, b) => a.at - b.at);
  const kept: string[] = [];
  let size = 0;
  for (let i = parts.length - 1; i >= 0; i -= 1) {
    const text = parts[i]?.text ?? '';
    if (size + text.length > maxChars) {
      if (kept.length === 0) kept.push(`…${text.slice(text.length - maxChars)}`);
      break;
    }
    kept.push(text);
    size += text.length + 2;
  }
  return { text: kept.reverse().join('\n\n'), notes, conversations, seen };
}

function fingerprint(key: string, content: string): string {
  return createHash('sha256').update(key).update('\0').update(content).digest('base64url').slice(0, 22);
}

/** `user: …` / `assistant: …` lines of a session log that `isNew` takes; malformed lines are skipped. */
function conversationLines(log: string | undefined, isNew: (at: number, line: string) => boolean): string[] {
  const out: string[] = [];
  for (const line of (log ?? '').split('\n')) {
    if (line.trim() === '') continue;
    let entry: unknown;
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // a half-written last line, or garbage: not a message
    }
    if (typeof entry !== 'object' || entry === null) continue;
    const { role, content, ts } = entry as { role?: unknown; content?: unknown; ts?: unknown };
    if ((role !== 'user' && role !== 'assistant') || typeof content !== 'string' || content.trim() === '')
      continue;
    const at = typeof ts === 'string' ? Date.parse(ts) : Number.NaN;
    if (!Number.isFinite(at) || !isNew(at, line)) continue;
    out.push(`${role} (${new Date(at).toISOString().slice(0, 16).replace('T', ' ')}): ${content.trim()}`);
  }
  return out;
}

async function names(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort();
  } catch {
    return []; // no such folder yet: nothing written there
  }
}

async function mtimeOf(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).mtimeMs;
  } catch {
    return undefined; // gone meanwhile
  }
}

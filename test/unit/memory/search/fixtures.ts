/**
 * Temporary workspaces for the memory search tests: notes, MEMORY.md and
 * session logs written as magpie writes them, and an index whose state
 * folder is a temporary folder too (never the real home).
 */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MemoryIndex, type MemoryIndexOptions } from '../../../../src/memory/search/memory-index.js';

export const TZ = 'Europe/Lisbon';

export interface TempSpace {
  /** The workspace (a real path). */
  ws: string;
  /** The state folder the index lives in. */
  state: string;
  /** A folder beside both, outside the workspace. */
  outside: string;
  index(options?: Partial<MemoryIndexOptions>): MemoryIndex;
  cleanup(): void;
}

export function tempSpace(): TempSpace {
  const root = mkdtempSync(path.join(os.tmpdir(), 'magpie-memsearch-'));
  const ws = path.join(root, 'workspace');
  const state = path.join(root, 'state');
  const outside = path.join(root, 'outside');
  for (const d of [ws, path.join(ws, 'memory'), path.join(ws, 'sessions'), outside])
    mkdirSync(d, { recursive: true });
  return {
    ws,
    state,
    outside,
    index: (options = {}) => new MemoryIndex({ workspace: ws, stateDir: state, timezone: TZ, ...options }),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** Writes `memory/YYYYMM/YYYYMMDD.md` for a YYYY-MM-DD date; returns its path relative to the workspace. */
export function writeNote(ws: string, date: string, lines: string[]): string {
  const ymd = date.replace(/-/g, '');
  const rel = `memory/${ymd.slice(0, 6)}/${ymd}.md`;
  mkdirSync(path.join(ws, 'memory', ymd.slice(0, 6)), { recursive: true });
  writeFileSync(path.join(ws, rel), `# ${date}\n\n${lines.join('\n')}\n`);
  return rel;
}

/** A stored message line as JsonlSessionStore writes it. */
export function line(
  role: string,
  content: unknown,
  ts: string,
  extra: Record<string, unknown> = {},
): string {
  return `${JSON.stringify({ role, content, ...extra, ts })}\n`;
}

/** Appends lines to `sessions/<name>.jsonl`; returns its path relative to the workspace. */
export function appendSession(ws: string, name: string, lines: string[]): string {
  const rel = `sessions/${name}.jsonl`;
  appendFileSync(path.join(ws, rel), lines.join(''));
  return rel;
}

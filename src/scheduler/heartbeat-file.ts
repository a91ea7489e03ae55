/**
 * HEARTBEAT.md: reading it and deciding whether it holds any task. A file of
 * only headings, HTML comments, blank lines and empty checkboxes (`- [ ]`
 * with nothing after them) holds none, so the heartbeat skips the LLM call.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

/** The file name inside the workspace. */
export const HEARTBEAT_FILE = 'HEARTBEAT.md';

/** What the heartbeat found in the workspace. */
export type HeartbeatTasks =
  | { status: 'missing'; file: string }
  | { status: 'empty'; file: string }
  | { status: 'tasks'; file: string; text: string };

/** A line that carries no task: blank, a heading, an empty list item or checkbox, a rule. */
const EMPTY_LINE = /^\s*(?:#{1,6}(?:\s.*)?|[-*+](?:\s+\[[ xX]?\])?|\d+[.)](?:\s+\[[ xX]?\])?|[-*_]{3,}|)\s*$/;

/**
 * Removes HTML comments and returns the task text, or undefined when no line
 * carries a task.
 * @example extractTasks('# Heartbeat\n<!-- add tasks -->\n- [ ]\n') // undefined
 */
export function extractTasks(markdown: string): string | undefined {
  const withoutComments = markdown.replace(/<!--[\s\S]*?(?:-->|$)/g, '');
  const lines = withoutComments.split(/\r?\n/);
  if (!lines.some((line) => !EMPTY_LINE.test(line))) return undefined;
  return withoutComments.replace(/\n{3,}/g, '\n\n').trim();
}

/** Reads `<workspace>/HEARTBEAT.md` and classifies it. Other read errors are thrown. */
export async function readHeartbeatTasks(workspace: string): Promise<HeartbeatTasks> {
  const file = path.join(workspace, HEARTBEAT_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { status: 'missing', file };
    throw err;
  }
  const tasks = extractTasks(text);
  return tasks === undefined ? { status: 'empty', file } : { status: 'tasks', file, text: tasks };
}

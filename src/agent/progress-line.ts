/**
 * The one short line a live reply shows while a tool runs ("reading
 * notes/plan.md", "searching the web: bus design", "running: exec …").
 * Arguments are the model's, so only harmless parts are shown: a path, a
 * query, a host — never a command line, a URL's query or a file's content.
 */
import type { ToolCall } from '../providers/types.js';

/** Longest progress line (characters). */
export const PROGRESS_LINE_LIMIT = 80;

/** What `call` is doing, for the chat that waits on it. */
export function progressLine(call: Pick<ToolCall, 'name' | 'arguments'>): string {
  const args = parseArguments(call.arguments);
  const text = (key: string) => (typeof args[key] === 'string' ? oneLine(args[key]) : '');
  const path = text('path');
  switch (call.name) {
    case 'read_file':
      return clip(path ? `reading ${path}` : 'reading a file');
    case 'list_dir':
      return clip(path ? `looking in ${path}` : 'looking at the workspace');
    case 'write_file':
    case 'append_file':
    case 'edit_file':
      return clip(path ? `writing ${path}` : 'writing a file');
    case 'web_search':
      return clip(text('query') ? `searching the web: ${text('query')}` : 'searching the web');
    case 'web_fetch':
      return clip(`fetching ${hostOf(text('url')) ?? 'a page'}`);
    case 'memory_search':
      return clip(text('query') ? `searching memory: ${text('query')}` : 'searching memory');
    case 'spawn':
    case 'subagent':
      return 'handing work to a helper';
    default:
      return clip(`running: ${oneLine(call.name)} …`);
  }
}

function parseArguments(raw: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(raw);
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    // Malformed arguments are the tool's to refuse; the line then names the tool only.
    return {};
  }
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).host || undefined;
  } catch {
    return undefined;
  }
}

/** Control characters and line breaks become spaces, runs of space one. */
function oneLine(text: string): string {
  return text
    .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

function clip(line: string): string {
  return line.length <= PROGRESS_LINE_LIMIT ? line : `${line.slice(0, PROGRESS_LINE_LIMIT - 1)}…`;
}

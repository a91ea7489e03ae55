/**
 * What the memory index stores as one searchable unit (a chunk): a paragraph
 * or list item of a Markdown note, with the heading it sits under, or the
 * text of one user or assistant message of a conversation (tool calls and
 * tool output are left out). Long texts are cut into pieces of about
 * {@link MAX_CHUNK_CHARS} at paragraph or word boundaries, so a pasted
 * document does not drown the short lines around it.
 */
import type { LocalClock } from './dates.js';

/** One searchable unit. */
export interface Chunk {
  /** 1-based line of the file where it starts (a session log: the message's line). */
  line: number;
  body: string;
  /** The Markdown heading above it ('' for none and for messages). */
  heading: string;
  /** Local day (YYYYMMDD) of a message; notes take theirs from the file name. */
  day?: number;
  /** When a message was written (ms since the epoch). */
  ts?: number;
  role?: 'user' | 'assistant';
}

/** Characters a chunk holds at most. */
export const MAX_CHUNK_CHARS = 1200;

const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const LIST_ITEM = /^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s/;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** Splits a Markdown note into chunks: paragraphs and list items under their headings; HTML comments dropped. */
export function noteChunks(text: string): Chunk[] {
  const out: Chunk[] = [];
  let heading = '';
  let current: { line: number; lines: string[] } | undefined;
  let inComment = false;
  const flush = () => {
    if (current) {
      for (const piece of splitLong(current.lines.join('\n').trim())) {
        out.push({ line: current.line, body: piece, heading });
      }
    }
    current = undefined;
  };
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, index) => {
    let line = raw;
    if (inComment || line.includes('<!--')) {
      const stripped = stripComments(line, inComment);
      inComment = stripped.open;
      line = stripped.text;
      if (line.trim() === '') return;
    }
    const h = HEADING.exec(line);
    if (h) {
      flush();
      heading = DATE_ONLY.test(h[2] ?? '') ? '' : (h[2] ?? '');
      return;
    }
    if (line.trim() === '') {
      flush();
      return;
    }
    const size = current ? current.lines.reduce((n, l) => n + l.length + 1, 0) : 0;
    if (current && (LIST_ITEM.test(line) || size + line.length > MAX_CHUNK_CHARS)) flush();
    if (!current) current = { line: index + 1, lines: [] };
    current.lines.push(line);
  });
  flush();
  return out;
}

/** Removes `<!-- … -->` from a line; `open` says whether a comment continues on the next line. */
function stripComments(line: string, inComment: boolean): { text: string; open: boolean } {
  let text = '';
  let rest = line;
  let open = inComment;
  while (rest !== '') {
    if (open) {
      const end = rest.indexOf('-->');
      if (end < 0) return { text, open: true };
      rest = rest.slice(end + 3);
      open = false;
    } else {
      const start = rest.indexOf('<!--');
      if (start < 0) return { text: text + rest, open: false };
      text += rest.slice(0, start);
      rest = rest.slice(start + 4);
      open = true;
    }
  }
  return { text, open };
}

/** The text of a stored session message, or undefined for tool output, tool-call-only turns and other lines. */
export function messageText(
  entry: unknown,
): { role: 'user' | 'assistant'; text: string; ts?: number } | undefined {
  if (!entry || typeof entry !== 'object' || Array.isArray(entry)) return undefined;
  const { role, content, ts } = entry as { role?: unknown; content?: unknown; ts?: unknown };
  if (role !== 'user' && role !== 'assistant') return undefined;
  let text = '';
  if (typeof content === 'string') text = content;
  else if (Array.isArray(content)) {
    text = content
      .map((part) =>
        part && typeof part === 'object' && (part as { type?: unknown }).type === 'text'
          ? String((part as { text?: unknown }).text ?? '')
          : '',
      )
      .filter((t) => t !== '')
      .join('\n');
  }
  text = text.trim();
  if (text === '') return undefined;
  const when = typeof ts === 'string' ? Date.parse(ts) : Number.NaN;
  return Number.isFinite(when) ? { role, text, ts: when } : { role, text };
}

/**
 * Chunks of the session-log lines in `text`, the first of which is line
 * `firstLine` of the file. Lines that are not messages with text (tool
 * results, corrupt lines) are skipped.
 */
export function sessionChunks(text: string, firstLine: number, clock: LocalClock): Chunk[] {
  const out: Chunk[] = [];
  const lines = text.split('\n');
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    let entry: unknown;
    try {
      entry = JSON.parse(line);
    } catch {
      // A corrupt line in a session log holds nothing to index; the session store skips it too.
      return;
    }
    const message = messageText(entry);
    if (!message) return;
    const local = message.ts === undefined ? undefined : clock.local(message.ts);
    for (const piece of splitLong(message.text)) {
      out.push({
        line: firstLine + index,
        body: piece,
        heading: '',
        role: message.role,
        ...(local ? { day: local.day, ts: message.ts } : {}),
      });
    }
  });
  return out;
}

const SEPARATORS = ['\n\n', '\n', ' '];

/** Cuts a text into pieces of at most MAX_CHUNK_CHARS: at blank lines, else at line ends, else at spaces. */
export function splitLong(text: string): string[] {
  return pack(text.trim(), 0)
    .map((piece) => piece.trim())
    .filter((piece) => piece !== '');
}

function pack(text: string, level: number): string[] {
  if (text.length <= MAX_CHUNK_CHARS) return [text];
  const separator = SEPARATORS[level];
  if (separator === undefined) {
    const slices: string[] = [];
    for (let at = 0; at < text.length; at += MAX_CHUNK_CHARS)
      slices.push(text.slice(at, at + MAX_CHUNK_CHARS));
    return slices;
  }
  const out: string[] = [];
  let current = '';
  for (const part of text.split(separator)) {
    const joined = current === '' ? part : current + separator + part;
    if (joined.length <= MAX_CHUNK_CHARS) {
      current = joined;
      continue;
    }
    if (current !== '') out.push(current);
    current = '';
    if (part.length > MAX_CHUNK_CHARS) out.push(...pack(part, level + 1));
    else current = part;
  }
  if (current !== '') out.push(current);
  return out;
}

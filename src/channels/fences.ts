/**
 * Markdown code fences as CommonMark defines them, for the splitter (chunk.ts):
 * an opening line is up to 3 spaces of indentation, then 3 or more backticks or
 * tildes, then an info string (a backtick fence's info string may not contain a
 * backtick); the block closes at a line of the same character, at least as long,
 * with nothing after it but spaces; an unclosed block runs to the end of the text.
 * One departure: a run of more than MAX_FENCE_RUN fence characters is text, not a
 * fence, so a reply of thousands of backticks is not closed and reopened in every part.
 */

/** A code block open at some point of the text. */
export interface OpenFence {
  /** The opening line without its indentation, e.g. "```ts" or "~~~~ python"; reopened verbatim. */
  line: string;
  /** The fence character. */
  char: '`' | '~';
  /** How many fence characters opened it; a closing fence needs at least as many. */
  length: number;
  /** The line that closes it (the opening run, without the info string). */
  marker: string;
}

/** The longest run of fence characters still read as a fence (real fences use 3 to a handful). */
export const MAX_FENCE_RUN = 32;

const RUN = `\`{3,${MAX_FENCE_RUN}}(?!\`)|~{3,${MAX_FENCE_RUN}}(?!~)`;
const OPENING = new RegExp(`^ {0,3}(${RUN})(.*)$`);
const CLOSING = new RegExp(`^ {0,3}(${RUN})[ \t]*$`);

/** The fence a line opens, or undefined when it is not an opening fence line. */
export function parseOpening(line: string): OpenFence | undefined {
  const match = OPENING.exec(withoutTrailingBlanks(line));
  if (!match) return undefined;
  const run = match[1]!;
  const char = run[0] as '`' | '~';
  if (char === '`' && match[2]!.includes('`')) return undefined; // inline code, not a fence
  return { line: line.trim(), char, length: run.length, marker: run };
}

/** `line` without trailing spaces, tabs and CRs (by hand: `/[ \t\r]+$/` is quadratic on a long blank run). */
function withoutTrailingBlanks(line: string): string {
  let end = line.length;
  while (end > 0 && (line[end - 1] === ' ' || line[end - 1] === '\t' || line[end - 1] === '\r')) end--;
  return end === line.length ? line : line.slice(0, end);
}

/** Whether `line` closes `fence`. */
export function closes(line: string, fence: OpenFence): boolean {
  const match = CLOSING.exec(line.replace(/\r$/, ''));
  return match !== null && match[1]![0] === fence.char && match[1]!.length >= fence.length;
}

/** Up to 3 spaces and three fence characters: what every opening line starts with. */
const OPENING_START = /^ {0,3}(?:```|~~~)/;
/** Whitespace other than a line break, from an index (sticky). */
const BLANKS = /[^\S\n]*/y;

/**
 * When `text` starts with an opening fence line: the fence and the length of that
 * line with its newline. With `maxLine`, a line whose text (trailing blanks aside)
 * is longer is not read at all (undefined), so a caller that calls this once per
 * part does not rescan a megabyte-long first line each time.
 */
export function openingFence(
  text: string,
  maxLine = Infinity,
): { fence: OpenFence; length: number } | undefined {
  if (!OPENING_START.test(text)) return undefined;
  let newline = text.length <= maxLine ? text.indexOf('\n') : text.slice(0, maxLine).indexOf('\n');
  if (newline === -1 && text.length > maxLine) {
    BLANKS.lastIndex = maxLine;
    BLANKS.exec(text);
    const after = BLANKS.lastIndex;
    if (after < text.length && text[after] !== '\n') return undefined;
    newline = after < text.length ? after : -1;
  }
  const fence = parseOpening(newline === -1 ? text : text.slice(0, newline));
  return fence && { fence, length: newline === -1 ? text.length : newline + 1 };
}

/**
 * When `text` starts (after blank lines) with the line that closes `fence`: the
 * length of that prefix with the line's newline.
 */
export function closingFence(text: string, fence: OpenFence): number | undefined {
  let at = 0;
  for (;;) {
    const newline = text.indexOf('\n', at);
    const line = newline === -1 ? text.slice(at) : text.slice(at, newline);
    const after = newline === -1 ? text.length : newline + 1;
    if (closes(line, fence)) return after;
    if (line.trim() !== '' || newline === -1) return undefined;
    at = after;
  }
}

/**
 * Walks the lines of `body`, starting inside `fence` (or outside any block), and
 * returns the block open at its end with, when that block was opened in `body`,
 * the index of its opening line.
 */
export function fenceStateAfter(
  body: string,
  fence: OpenFence | undefined,
): { open: OpenFence | undefined; openedAt: number | undefined } {
  let open = fence;
  let openedAt: number | undefined;
  let at = 0;
  for (const line of body.split('\n')) {
    if (!open) {
      open = parseOpening(line);
      if (open) openedAt = at;
    } else if (closes(line, open)) {
      open = undefined;
      openedAt = undefined;
    }
    at += line.length + 1;
  }
  return { open, openedAt };
}

/** Whether `part` shows anything: a non-blank line that is neither an opening nor a closing fence. */
export function hasContent(part: string): boolean {
  let open: OpenFence | undefined;
  for (const line of part.split('\n')) {
    if (!open) {
      open = parseOpening(line);
      if (!open && line.trim() !== '') return true;
    } else if (closes(line, open)) open = undefined;
    else if (line.trim() !== '') return true;
  }
  return false;
}

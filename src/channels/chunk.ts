/**
 * Splits a long reply into parts under a platform limit (Telegram 4096, Discord 2000)
 * without breaking Markdown code blocks: a part cut inside a ``` or ~~~ fence closes
 * it, and the next part reopens it with the same info string (language). No part is
 * only an empty code block. A reply is sent in at most MAX_REPLY_PARTS parts: a
 * longer one is cut, its last part saying so (capParts).
 */
import { closingFence, fenceStateAfter, hasContent, type OpenFence, openingFence } from './fences.js';

/**
 * The most messages one reply is sent as (about 40,000 characters on Telegram,
 * 20,000 on Discord). A reply needing more is cut after MAX_REPLY_PARTS − 1 parts
 * and a last part says how long it was, so no text can make the bot post hundreds
 * of messages. Neither sender posts files, so the rest is not sent as an attachment.
 */
export const MAX_REPLY_PARTS = 10;

/** The last part of a cut reply: what was shown of how much. */
export function cutNotice(shown: number, total: number, characters: number): string {
  return `[Reply cut: it was ${characters.toLocaleString('en-US')} characters, ${total} messages long; only the first ${shown} were sent.]`;
}

/**
 * `parts` when there are at most `max`; else the first `max − 1` and the notice
 * (cutNotice) made into a part by `toPart`. `total` is how many parts the whole
 * reply makes, when `parts` holds only its first ones.
 *
 * @example
 * capParts(splitMessage(reply, 2000), (notice) => notice, reply.length);
 */
export function capParts<T>(
  parts: T[],
  toPart: (notice: string) => T,
  characters: number,
  max = MAX_REPLY_PARTS,
  total = parts.length,
): T[] {
  if (parts.length <= max) return parts;
  const shown = Math.max(0, max - 1);
  return [...parts.slice(0, shown), toPart(cutNotice(shown, Math.max(total, parts.length), characters))];
}

/** splitMessage, capped at `max` parts (capParts); the notice is cut to `limit` too. */
export function splitReply(text: string, limit: number, max = MAX_REPLY_PARTS): string[] {
  return capParts(splitMessage(text, limit), (notice) => notice.slice(0, limit), text.length, max);
}

/**
 * Splits `text` into parts of at most `limit` characters (UTF-16 code units, which
 * never undercounts Telegram's or Discord's own measure).
 *
 * Cuts at a paragraph break (blank line), else a line break, else a space, preferring
 * a cut in the second half of the window so parts are not tiny; only when none exists,
 * cuts hard at a grapheme boundary (never inside a surrogate pair or emoji sequence).
 * A cut inside a ``` or ~~~ code block (fences as CommonMark has them, see fences.ts)
 * ends the part with a closing fence and starts the next part with the original
 * opening line (info string kept); the added fence characters count against the
 * limit, and a block left open at the end of the text is closed in its last part.
 * Parts that would show nothing (whitespace, or only an empty code block) are never
 * produced; text within the limit comes back unchanged as one part.
 *
 * @example
 * splitMessage(reply, 2000).forEach((part) => channel.send(part));
 */
export function splitMessage(text: string, limit: number): string[] {
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError(`splitMessage limit must be a positive integer, got ${limit}`);
  }
  if (text.trim() === '') return [];
  if (text.length <= limit) return [text];

  const parts: string[] = [];
  const blanks = blankRuns(text);
  let rest = text;
  let fence: OpenFence | undefined;
  while (rest !== '') {
    if (!fence) {
      const blank = blanks(text.length - rest.length);
      if (blank.end === text.length) break; // only whitespace left
      if (blank.lastNewline !== -1) rest = text.slice(blank.lastNewline + 1); // drop leading blank lines
      // A part does not start with a bare opening line: it becomes the reopening prefix,
      // so a cut right after it cannot leave a part that is only an empty block.
      const opening = openingFence(rest, limit);
      if (opening && reopenable(opening.fence, limit)) {
        fence = opening.fence;
        rest = rest.slice(opening.length);
        continue;
      }
    } else {
      // The block ends right here (the previous part's added close already ended it).
      const closing = closingFence(rest, fence);
      if (closing !== undefined) {
        fence = undefined;
        rest = rest.slice(closing);
        continue;
      }
    }
    const prefix = fence && reopenable(fence, limit) ? `${fence.line}\n` : '';
    const startFence = prefix ? fence : undefined;
    const last = finalPiece(rest, prefix, startFence, limit);
    if (last !== undefined) {
      if (hasContent(last)) parts.push(last);
      break;
    }
    const piece = cutPiece(rest, prefix, startFence, limit);
    if (hasContent(piece.part)) parts.push(piece.part);
    fence = piece.fenceAfter;
    rest = rest.slice(piece.next);
  }
  return parts;
}

/** Whitespace from an index (sticky). */
const BLANK_RUN = /\s*/y;

/**
 * The whitespace run at an index of `text` (`rest` is always a suffix of it): where
 * it ends and its last line break at or after the index (-1: none). Cached, because
 * the splitter asks once per part and a long run of spaces is many parts: rescanning
 * it each time (`/^\s*\n/`, `trim()`) was quadratic.
 */
function blankRuns(text: string): (at: number) => { end: number; lastNewline: number } {
  let start = -1;
  let end = -1;
  let lastNewline = -1;
  return (at) => {
    if (at < start || at > end) {
      BLANK_RUN.lastIndex = at;
      BLANK_RUN.exec(text);
      start = at;
      end = BLANK_RUN.lastIndex;
      const newline = text.slice(at, end).lastIndexOf('\n');
      lastNewline = newline === -1 ? -1 : at + newline;
    }
    return { end, lastNewline: lastNewline >= at ? lastNewline : -1 };
  };
}

/** Whether a part can reopen `fence`: room for the opening line, some content and the close. */
function reopenable(fence: OpenFence, limit: number): boolean {
  return fence.line.length + 1 + fence.marker.length + 8 <= limit;
}

/**
 * The rest as the last part (a fence still open at its end is closed, as in every
 * other part), or undefined when it does not fit.
 */
function finalPiece(
  rest: string,
  prefix: string,
  startFence: OpenFence | undefined,
  limit: number,
): string | undefined {
  if (prefix.length + rest.length > limit) return undefined;
  const body = rest.replace(/\s+$/, '');
  const open = fenceStateAfter(body, startFence).open;
  const part = open ? `${prefix}${body}\n${open.marker}` : prefix + rest;
  if (part.length <= limit) return part;
  // No room for the close: the caller cuts the rest in two instead.
  return undefined;
}

interface Piece {
  /** The text of the part, fences added. */
  part: string;
  /** The content taken from `rest`, without fences. */
  body: string;
  /** Where the remaining text starts in `rest` (separator skipped). */
  next: number;
  /** The fence still open after the body, to reopen in the next part. */
  fenceAfter: OpenFence | undefined;
}

/** Takes the longest good piece off `rest` so that prefix + piece + closing fence fits `limit`. */
function cutPiece(rest: string, prefix: string, startFence: OpenFence | undefined, limit: number): Piece {
  let budget = limit - prefix.length;
  for (;;) {
    let { end, next } = findCut(rest, budget);
    let state = fenceStateAfter(rest.slice(0, end), startFence);
    // A block opened at the very end of the piece, nothing in it yet: cut before its opening
    // line, which then starts the next part (no trailing empty block here).
    const openedAt = state.openedAt;
    if (openedAt !== undefined && rest.slice(0, openedAt).trim() !== '') {
      const lineEnd = rest.indexOf('\n', openedAt);
      if (lineEnd === -1 || lineEnd >= end || rest.slice(lineEnd, end).trim() === '') {
        end = rest.slice(0, openedAt).trimEnd().length;
        next = openedAt;
        state = fenceStateAfter(rest.slice(0, end), startFence);
      }
    }
    const body = rest.slice(0, end);
    const fenceAfter = state.open;
    const close = fenceAfter ? (body.endsWith('\n') ? '' : '\n') + fenceAfter.marker : '';
    const part = prefix + body + close;
    // A fence close that does not fit: shrink the window by its length and cut again.
    if (part.length <= limit || budget <= 1) {
      if (part.length > limit) return { part: prefix + body, body, next, fenceAfter: undefined };
      return { part, body, next, fenceAfter };
    }
    budget = Math.max(1, budget - (part.length - limit));
  }
}

/**
 * The best cut in `rest` for a window of `budget` characters: `end` is where the
 * part's body ends, `next` where the remaining text starts (after the separator).
 */
function findCut(rest: string, budget: number): { end: number; next: number } {
  const window = rest.slice(0, budget + 1); // +1: a separator right after the window still counts
  const separators: RegExp[] = [/\n(?:[ \t]*\n)+/g, /\n/g, /[ \t]+/g];
  const half = Math.floor(budget / 2);
  for (const minimum of [half, 1]) {
    for (const separator of separators) {
      const cut = lastMatch(window, separator, minimum, budget);
      if (cut) return cut;
    }
  }
  const end = graphemeBoundaryAtOrBefore(rest, budget);
  return { end, next: end };
}

/** The last match of `separator` that starts at or after `minimum` and at or before `budget`. */
function lastMatch(
  window: string,
  separator: RegExp,
  minimum: number,
  budget: number,
): { end: number; next: number } | undefined {
  let best: { end: number; next: number } | undefined;
  for (const match of window.matchAll(separator)) {
    const start = match.index;
    if (start >= minimum && start <= budget) best = { end: start, next: start + match[0].length };
  }
  return best;
}

/** Stateless, and costly to build: one for every cut (a hard cut per part made it 80% of the time). */
const GRAPHEMES = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** The largest grapheme boundary ≤ `max` (at least one grapheme, so progress is certain). */
function graphemeBoundaryAtOrBefore(text: string, max: number): number {
  const window = text.slice(0, max + 64);
  // The segment holding `max` starts at the last boundary before it (ICU finds it
  // locally, without walking every grapheme of the window).
  const boundary =
    max >= window.length ? window.length : (GRAPHEMES.segment(window).containing(max)?.index ?? 0);
  if (boundary > 0) return boundary;
  // A single grapheme longer than the limit (a long combining sequence): split code points.
  const first = text.codePointAt(0) ?? 0;
  return Math.min(text.length, Math.max(1, first > 0xffff && max >= 2 ? 2 : 1));
}

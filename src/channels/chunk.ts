/**
 * Splits a long reply into parts under a platform limit (Telegram 4096, Discord 2000)
 * without breaking Markdown code blocks: a part cut inside a ``` fence closes it, and
 * the next part reopens it with the same info string (language).
 */

/** A fence line: up to 3 spaces, 3+ backticks, then the info string (e.g. `ts`). */
const FENCE_LINE = /^ {0,3}(`{3,})([^`]*)$/;

/** Fence state at some point of the text: the opening line to repeat, or none. */
interface OpenFence {
  /** The opening line as written (trimmed), e.g. "```ts"; reopened verbatim. */
  line: string;
  /** Backtick count of the opening fence; a closing fence needs at least as many. */
  ticks: number;
}

/**
 * Splits `text` into parts of at most `limit` characters (UTF-16 code units, which
 * never undercounts Telegram's or Discord's own measure).
 *
 * Cuts at a paragraph break (blank line), else a line break, else a space, preferring
 * a cut in the second half of the window so parts are not tiny; only when none exists,
 * cuts hard at a grapheme boundary (never inside a surrogate pair or emoji sequence).
 * A cut inside a ``` code block ends the part with a closing fence and starts the next
 * part with the original opening line (language kept); the added fence characters
 * count against the limit. Whitespace-only parts are never produced; text within the
 * limit comes back unchanged as one part.
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
  let rest = text;
  let fence: OpenFence | undefined;
  while (rest !== '') {
    if (!fence) {
      rest = rest.replace(/^\s*\n/, '');
      if (rest.trim() === '') break;
    }
    // Reopen the fence only when there is room left for content and the close.
    const prefix =
      fence && fence.line.length + 1 + closeFor(fence).length + 8 <= limit ? `${fence.line}\n` : '';
    const startFence = prefix ? fence : undefined;
    if (prefix.length + rest.length <= limit) {
      parts.push(prefix + rest);
      break;
    }
    const piece = cutPiece(rest, prefix, startFence, limit);
    if (piece.body.trim() !== '') parts.push(piece.part);
    fence = piece.fenceAfter;
    rest = rest.slice(piece.next);
  }
  return parts;
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
    const { end, next } = findCut(rest, budget);
    const body = rest.slice(0, end);
    const fenceAfter = fenceStateAfter(body, startFence);
    const close = fenceAfter ? (body.endsWith('\n') ? '' : '\n') + closeFor(fenceAfter) : '';
    const part = prefix + body + close;
    // A fence close that does not fit: shrink the window by its length and cut again.
    if (part.length <= limit || budget <= 1) {
      if (part.length > limit) return { part: prefix + body, body, next, fenceAfter: undefined };
      return { part, body, next, fenceAfter };
    }
    budget = Math.max(1, budget - (part.length - limit));
  }
}

/** The closing fence for an open block. */
function closeFor(fence: OpenFence): string {
  return '`'.repeat(fence.ticks);
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

/** The largest grapheme boundary ≤ `max` (at least one grapheme, so progress is certain). */
function graphemeBoundaryAtOrBefore(text: string, max: number): number {
  const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
  let boundary = 0;
  for (const { index, segment } of segmenter.segment(text.slice(0, max + 64))) {
    const end = index + segment.length;
    if (end > max) break;
    boundary = end;
  }
  if (boundary > 0) return boundary;
  // A single grapheme longer than the limit (a long combining sequence): split code points.
  const first = text.codePointAt(0) ?? 0;
  return Math.min(text.length, Math.max(1, first > 0xffff && max >= 2 ? 2 : 1));
}

/** Walks the lines of `body` (starting in `fence`) and returns the fence open at its end. */
function fenceStateAfter(body: string, fence: OpenFence | undefined): OpenFence | undefined {
  let open = fence;
  for (const line of body.split('\n')) {
    const match = FENCE_LINE.exec(line.trimEnd());
    if (!match) continue;
    const ticks = match[1]!.length;
    const info = match[2]!.trim();
    if (!open) open = { line: line.trim(), ticks };
    else if (info === '' && ticks >= open.ticks) open = undefined;
  }
  return open;
}

/**
 * `/forget <words>`: removes from MEMORY.md every line or bullet (a bullet
 * with its indented continuation lines) holding all the words, ignoring
 * case. Headings are never removed. The change is recorded in the history as
 * `/forget`, so `magpie memory undo` brings it back; the reply shows the
 * affected sections before and after.
 */
import type { MemoryHistory } from './history.js';

/** One removable unit of MEMORY.md: lines [start, end). */
interface Item {
  start: number;
  end: number;
  /** Index of the heading line the item lies under, -1 for none. */
  section: number;
}

/** Words at most, and characters of the argument at most. */
const MAX_WORDS = 20;
const MAX_ARGUMENT = 300;

/** What /forget did, for the reply. */
export interface ForgetResult {
  /** The reply text. */
  reply: string;
  /** The history rev of the change, when something was removed. */
  rev: string | undefined;
}

/** Runs `/forget <argument>` against the history's MEMORY.md. */
export async function forget(history: MemoryHistory, argument: string | undefined): Promise<ForgetResult> {
  const words = (argument ?? '')
    .slice(0, MAX_ARGUMENT)
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w !== '');
  if (words.length === 0) {
    return {
      reply: 'Say what to forget: /forget and words of the fact, e.g. /forget dentist Tuesday.',
      rev: undefined,
    };
  }
  if (words.length > MAX_WORDS) {
    return { reply: `Give at most ${MAX_WORDS} words to /forget.`, rev: undefined };
  }
  const shown = words.join(' ');
  return history.locked(async () => {
    await history.recordLocked('hand edit');
    const before = await history.store.readLongTerm();
    const lines = before.split('\n');
    const matched = items(lines).filter((item) =>
      words.every((w) => lines.slice(item.start, item.end).join(' ').toLowerCase().includes(w)),
    );
    if (matched.length === 0) return { reply: `Nothing in memory matches "${shown}".`, rev: undefined };
    const drop = new Set(matched.flatMap((m) => range(m.start, m.end)));
    const after = lines.filter((_, i) => !drop.has(i)).join('\n');
    await history.store.writeLongTerm(after);
    const count = `${matched.length} item${matched.length === 1 ? '' : 's'}`;
    const rev = await history.recordLocked('/forget', `/forget ${shown}: removed ${count}`);
    const sections = [...new Set(matched.map((m) => m.section))];
    const reply = [
      `Forgot ${count} from memory (matching "${shown}").`,
      '',
      'Before:',
      ...sections.flatMap((s) => sectionLines(lines, s, () => true)),
      '',
      'After:',
      ...sections.flatMap((s) => sectionLines(lines, s, (i) => !drop.has(i))),
      '',
      rev ? `Undo with: magpie memory undo ${rev}` : '',
    ].join('\n');
    return { reply: reply.trimEnd(), rev };
  });
}

const HEADING = /^\s{0,3}#{1,6}(\s|$)/;
const BULLET = /^\s*([-*+]|\d+[.)])\s/;

/** The removable items: each non-blank, non-heading line, with a bullet's indented continuation lines. */
function items(lines: readonly string[]): Item[] {
  const out: Item[] = [];
  let section = -1;
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? '';
    if (HEADING.test(line)) {
      section = i;
      i += 1;
      continue;
    }
    if (line.trim() === '') {
      i += 1;
      continue;
    }
    const indent = line.length - line.trimStart().length;
    let end = i + 1;
    if (BULLET.test(line)) {
      while (end < lines.length) {
        const next = lines[end] ?? '';
        const nextIndent = next.length - next.trimStart().length;
        if (next.trim() === '' || HEADING.test(next) || nextIndent <= indent || BULLET.test(next)) break;
        end += 1;
      }
    }
    out.push({ start: i, end, section });
    i = end;
  }
  return out;
}

/** The lines of the section starting at heading `section` (-1: before the first heading) that `keep` keeps. */
function sectionLines(lines: readonly string[], section: number, keep: (i: number) => boolean): string[] {
  const out: string[] = [];
  for (let i = section + 1; i < lines.length && !HEADING.test(lines[i] ?? ''); i += 1) {
    if (keep(i) && (lines[i] ?? '').trim() !== '') out.push(lines[i] ?? '');
  }
  const heading = section >= 0 ? [lines[section] ?? ''] : [];
  return [...heading, ...(out.length > 0 ? out : ['(nothing left here)'])];
}

function range(start: number, end: number): number[] {
  return Array.from({ length: end - start }, (_, k) => start + k);
}

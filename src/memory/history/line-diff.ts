/**
 * Which lines a change of MEMORY.md added and removed (as multisets, order
 * ignored), and the one-line summary a history commit carries.
 */

/** Lines of `after` not in `before`, and of `before` not in `after` (blank lines ignored). */
export function lineChanges(before: string, after: string): { added: string[]; removed: string[] } {
  const count = new Map<string, number>();
  for (const line of lines(before)) count.set(line, (count.get(line) ?? 0) + 1);
  const added: string[] = [];
  for (const line of lines(after)) {
    const left = count.get(line) ?? 0;
    if (left > 0) count.set(line, left - 1);
    else added.push(line);
  }
  const removed: string[] = [];
  const remaining = new Map(count);
  for (const line of lines(before)) {
    const left = remaining.get(line) ?? 0;
    if (left > 0) {
      removed.push(line);
      remaining.set(line, left - 1);
    }
  }
  return { added, removed };
}

/** e.g. `+ - Marta lives in Coimbra (and 2 more lines)`; `first` marks the first recorded version. */
export function changeSummary(before: string, after: string, first = false): string {
  const { added, removed } = lineChanges(before, after);
  const headline =
    added[0] !== undefined ? `+ ${added[0]}` : removed[0] !== undefined ? `- ${removed[0]}` : 'whitespace';
  const more = added.length + removed.length - 1;
  const text = `${clip(headline)}${more > 0 ? ` (and ${more} more line${more === 1 ? '' : 's'})` : ''}`;
  return first ? `first recorded version: ${text}` : text;
}

function lines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== '');
}

function clip(text: string): string {
  return text.length > 70 ? `${text.slice(0, 69)}…` : text;
}

/**
 * What the user wrote in a mail, without what they quoted or signed: lines
 * starting `>`, the "On … wrote:" line that introduces a quote (also when a
 * client wrapped it over two lines), everything after an Outlook separator
 * ("-----Original Message-----", a line of underscores) and everything after
 * the `-- ` signature line. Line by line, no regex over the body.
 */

/** The user's own words in a plain-text mail body. */
export function stripQuoted(text: string): string {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const kept: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const trimmed = line.trim();
    if (line === '-- ' || line === '--') break;
    if (isSeparator(trimmed)) break;
    if (trimmed.startsWith('>')) continue;
    if (introducesQuote(trimmed)) continue;
    const next = lines[i + 1]?.trim();
    if (next !== undefined && trimmed.startsWith('On ') && introducesQuote(`${trimmed} ${next}`)) {
      i++;
      continue;
    }
    kept.push(line);
  }
  return kept.join('\n').trim();
}

/** "On Tue, 3 Jun 2025 at 10:00, Ann <ann@example.com> wrote:" */
function introducesQuote(line: string): boolean {
  return line.startsWith('On ') && line.endsWith(' wrote:');
}

function isSeparator(line: string): boolean {
  if (/^-{3,} ?Original Message ?-{3,}$/i.test(line)) return true;
  return line.length >= 10 && line.split('').every((c) => c === '_');
}

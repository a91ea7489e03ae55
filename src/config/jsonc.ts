/**
 * JSON with comments, as editors write mcp.json: `//` and `/* … *\/`
 * comments and trailing commas are blanked out (same length, so positions in
 * JSON.parse errors still point at the right line) before JSON.parse.
 */

/** `text` with comments and trailing commas replaced by spaces; strings are left alone. */
export function stripJsonComments(text: string): string {
  const out = text.split('');
  let i = 0;
  let lastComma = -1;
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  while (i < text.length) {
    const ch = text[i];
    if (ch === '"') {
      lastComma = -1;
      i += 1;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i += 1;
    } else if (ch === '/' && text[i + 1] === '/') {
      const end = text.indexOf('\n', i);
      const stop = end === -1 ? text.length : end;
      blank(i, stop);
      i = stop;
    } else if (ch === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? text.length : end + 2;
      blank(i, stop);
      i = stop;
    } else {
      // A comma followed only by blanks and comments before } or ] is a trailing one.
      if (ch === ',') lastComma = i;
      else if (ch === '}' || ch === ']') {
        if (lastComma !== -1) blank(lastComma, lastComma + 1);
        lastComma = -1;
      } else if (!/\s/.test(ch ?? '')) lastComma = -1;
      i += 1;
    }
  }
  return out.join('');
}

/** Where JSON.parse failed, as "line L, column C" (V8 reports a character position). */
export function describeJsonError(err: unknown, text: string): string {
  const message = err instanceof Error ? err.message : String(err);
  const lineCol = /line (\d+) column (\d+)/.exec(message);
  const position = /position (\d+)/.exec(message);
  let where = '';
  if (lineCol) where = `line ${lineCol[1]}, column ${lineCol[2]}`;
  else if (position) {
    const before = text.slice(0, Number(position[1]));
    const line = before.split('\n').length;
    where = `line ${line}, column ${before.length - before.lastIndexOf('\n')}`;
  }
  const what = message
    .replace(/\s*(in JSON )?at position \d+.*$/, '')
    .replace(/\s*\(line \d+ column \d+\)/, '');
  return where ? `${what} at ${where}` : what;
}

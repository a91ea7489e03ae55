/**
 * Reads a SKILL.md front matter block. The usual block is a few `key: plain text`
 * lines, read here directly with the YAML 1.2 core schema's meaning (text, or
 * true/false); anything else (quotes, lists, numbers, comments, multi-line values)
 * goes to the `yaml` package, loaded only then, so `magpie agent` does not pay
 * for a YAML parser to read `name:` and `description:`.
 */

/** A simple key, which a fast-path line starts with. */
const KEY = /^[A-Za-z][A-Za-z0-9_]*/;
/** Characters a fast-path value may not hold (those a regex `.` does not match). */
const LINE_BREAKS = /[\n\r\u2028\u2029]/;
/**
 * The longest front matter read: a SKILL.md's is a few lines, and the `yaml`
 * parser is not linear on adversarial text (nested brackets, blank lines).
 */
export const MAX_FRONT_MATTER_CHARS = 16 * 1024;
/** Plain values that mean something other than text in YAML, or that YAML reads differently. */
const NOT_PLAIN_TEXT = /^[-?:,[\]{}#&*!|>'"%@`~+.0-9]|^(?:null|Null|NULL)$|:(?:[ \t]|$)|[ \t]#/;
const BOOLEANS: Record<string, boolean> = {
  true: true,
  True: true,
  TRUE: true,
  false: false,
  False: false,
  FALSE: false,
};

/**
 * The front matter's value (as `yaml`'s `parse` gives it).
 *
 * @throws Error from the `yaml` package when the block is not valid YAML.
 */
export async function readFrontMatter(block: string): Promise<unknown> {
  if (block.length > MAX_FRONT_MATTER_CHARS) {
    throw new RangeError(`front matter longer than ${MAX_FRONT_MATTER_CHARS / 1024} KiB`);
  }
  const simple = simpleMapping(block);
  if (simple !== undefined) return simple;
  const { parse } = await import('yaml');
  return parse(block);
}

/** The mapping when every line is `key: plain value` with distinct keys, else undefined. */
export function simpleMapping(block: string): Record<string, string | boolean> | undefined {
  const out: Record<string, string | boolean> = {};
  const lines = block.split('\n');
  for (const line of lines) {
    const match = simpleLine(line);
    if (!match) return undefined;
    const { key, value } = match;
    if (value === '' || Object.hasOwn(out, key) || NOT_PLAIN_TEXT.test(value) || hasControl(value)) {
      return undefined;
    }
    out[key] = BOOLEANS[value] ?? value;
  }
  return lines.length > 0 ? out : undefined;
}

/**
 * `key: value` read by hand, in one pass (a backtracking regex took seconds on a
 * line of many spaces): a simple key, `:`, one or more spaces, then the value
 * without trailing blanks.
 */
function simpleLine(line: string): { key: string; value: string } | undefined {
  const key = KEY.exec(line)?.[0];
  if (key === undefined || line[key.length] !== ':' || line[key.length + 1] !== ' ') return undefined;
  let start = key.length + 1;
  while (line[start] === ' ') start++;
  let end = line.length;
  while (end > start && (line[end - 1] === ' ' || line[end - 1] === '\t')) end--;
  const value = line.slice(start, end);
  return LINE_BREAKS.test(value) ? undefined : { key, value };
}

/** Control characters (other than tab), which YAML restricts: left to the real parser. */
function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i += 1) {
    const code = value.charCodeAt(i);
    if ((code < 0x20 && code !== 0x09) || code === 0x7f) return true;
  }
  return false;
}

/**
 * Adversarial inputs for parsers of untrusted text: long runs of the pieces that
 * make a backtracking regex or a slice-per-token loop take quadratic time
 * (unclosed `<!--`, spaces without an end, backtick and tilde runs, nested
 * brackets, `a(){` function heads). Each generator returns a string of about
 * `bytes` characters.
 */

/** `unit` repeated until the text is about `bytes` long (then `tail`). */
export function repeatTo(unit: string, bytes: number, tail = ''): string {
  return unit.repeat(Math.max(1, Math.floor(bytes / unit.length))) + tail;
}

/** The named inputs, about `bytes` characters each. */
export function adversarialInputs(bytes: number): Record<string, string> {
  return {
    'unclosed comments': repeatTo('<!--', bytes),
    'spaces then text': repeatTo(' ', bytes, 'x'),
    'spaces then colon': `k:${repeatTo(' ', bytes, 'x')}`,
    backticks: repeatTo('`', bytes),
    'backtick lines': repeatTo('````\n', bytes),
    tildes: repeatTo('~', bytes),
    'tilde lines': repeatTo('~~~~\n', bytes),
    'nested brackets': `${repeatTo('[[[(((', bytes / 2)}${repeatTo(')))]]]', bytes / 2)}`,
    'unclosed brackets': repeatTo('[[[(((', bytes),
    'function heads': repeatTo('a(){', bytes),
    'unclosed tags': repeatTo('<a href="', bytes),
    'emphasis runs': repeatTo('*_', bytes),
    'blank lines': repeatTo('\n \n', bytes, 'x'),
  };
}

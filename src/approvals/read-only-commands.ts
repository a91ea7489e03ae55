/**
 * Which exec commands only read: read with the exec guard's own sh reader
 * (tools/exec-policy-parse.ts), so `ls; rm -rf x`, `cat a > b`,
 * `ls $(rm x)` and `find . -delete` are not read-only however they are
 * quoted. Every simple command of the line must be a known reader with no
 * option that writes or runs something, no output redirection except to
 * /dev/null, and nothing the reader cannot know (a `$var` or `$(…)`).
 */
import { parseShell, type ShellCommand } from '../tools/exec-policy-parse.js';

/** Programs that only read, whatever their (non-excluded) options. */
const READERS = new Set([
  'ls',
  'cat',
  'head',
  'tail',
  'wc',
  'grep',
  'egrep',
  'fgrep',
  'rg',
  'pwd',
  'echo',
  'printf',
  'date',
  'whoami',
  'id',
  'uname',
  'stat',
  'file',
  'du',
  'df',
  'tree',
  'which',
  'uniq',
  'cut',
  'tr',
  'diff',
  'cmp',
  'basename',
  'dirname',
  'realpath',
  'readlink',
  'true',
  'false',
  'test',
  'jq',
  'nl',
  'column',
  'sha256sum',
  'md5sum',
]);

/** git's subcommands that only read. */
const GIT_READERS = new Set(['status', 'log', 'diff', 'show', 'blame', 'ls-files', 'rev-parse', 'shortlog']);

/** Options that make an otherwise reading program write or run something. */
const WRITING_OPTIONS: Record<string, RegExp> = {
  find: /^-(delete|exec|execdir|ok|okdir|fprint|fprint0|fprintf|fls)$/,
  sort: /^(-o|--output)/,
  uniq: /^[^-]/, // a second file operand is uniq's output
};

/** Redirections that write somewhere other than /dev/null. */
const isWritingRedirect = (op: string, target: string) =>
  op !== '<' &&
  op !== '<<' &&
  op !== '<<-' &&
  op !== '<<<' &&
  target !== '/dev/null' &&
  !/^&[0-9-]$/.test(target);

/** True when the whole command line only reads (see the file's comment). */
export function isReadOnlyCommand(line: string): boolean {
  if (line.trim() === '') return false;
  let parsed: ReturnType<typeof parseShell>;
  try {
    parsed = parseShell(line);
  } catch {
    return false;
  }
  if (parsed.substitutions.length > 0 || parsed.commands.length === 0) return false;
  return parsed.commands.every(readsOnly);
}

function readsOnly(command: ShellCommand): boolean {
  if (command.words.some((w) => w.dynamic)) return false;
  if (command.redirects.some((r) => r.target.dynamic || isWritingRedirect(r.op, r.target.text))) return false;
  const [program, ...args] = command.words.map((w) => w.text);
  if (program === undefined) return false;
  if (program === 'find') return !args.some((a) => WRITING_OPTIONS.find?.test(a));
  if (program === 'sort') return !args.some((a) => WRITING_OPTIONS.sort?.test(a));
  if (program === 'uniq') return args.filter((a) => WRITING_OPTIONS.uniq?.test(a)).length <= 1;
  if (program === 'git') return gitReads(args);
  return READERS.has(program);
}

/** `git <reader> …` with no option that writes (`--output`), and `git branch` listing only. */
function gitReads(args: string[]): boolean {
  // Global options before the subcommand (-C dir, -c key=value) could point git anywhere: not read-only.
  const [sub, ...rest] = args;
  if (sub === undefined) return false;
  if (rest.some((a) => a.startsWith('--output') || a === '--ext-diff' || a.startsWith('--exec')))
    return false;
  if (sub === 'branch')
    return rest.every((a) => /^(-a|-r|-v|-vv|--list|--all|--remotes|--verbose|--show-current)$/.test(a));
  return GIT_READERS.has(sub);
}

/**
 * The prefix an "always allow" rule stores for `line`: its first program,
 * with the subcommand for programs that have them (`git push`, `npm
 * install`), e.g. `git push origin main` → `git push`. Undefined when the
 * line holds something the reader cannot know.
 */
export function commandPrefix(line: string): string | undefined {
  let parsed: ReturnType<typeof parseShell>;
  try {
    parsed = parseShell(line);
  } catch {
    return undefined;
  }
  const first = parsed.commands.find((c) => !readsOnly(c)) ?? parsed.commands[0];
  if (!first || first.words.length === 0 || first.words[0]?.dynamic) return undefined;
  const [program, second] = first.words;
  if (program === undefined) return undefined;
  if (second && !second.dynamic && /^[a-z][a-z0-9-]*$/.test(second.text) && SUBCOMMANDED.has(program.text)) {
    return `${program.text} ${second.text}`;
  }
  return program.text;
}

/** Programs whose second word is a subcommand that changes what they do. */
const SUBCOMMANDED = new Set([
  'git',
  'npm',
  'npx',
  'pnpm',
  'yarn',
  'pip',
  'pip3',
  'cargo',
  'go',
  'docker',
  'kubectl',
  'apt',
  'apt-get',
  'systemctl',
  'gh',
]);

/**
 * True when every simple command of `line` either only reads or starts with
 * one of `prefixes` (whole words: `git push` matches `git push origin`, not
 * `git pushx`). A line with `$(…)` or an unknown `$var` never matches.
 */
export function matchesPrefixes(line: string, prefixes: readonly string[]): boolean {
  if (prefixes.length === 0) return false;
  let parsed: ReturnType<typeof parseShell>;
  try {
    parsed = parseShell(line);
  } catch {
    return false;
  }
  if (parsed.substitutions.length > 0 || parsed.commands.length === 0) return false;
  return parsed.commands.every((command) => {
    if (readsOnly(command)) return true;
    if (command.words.some((w) => w.dynamic)) return false;
    const words = command.words.map((w) => w.text);
    return prefixes.some((prefix) => {
      const want = prefix.split(' ');
      return want.every((word, i) => words[i] === word);
    });
  });
}

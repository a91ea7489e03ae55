/**
 * What `exec` refuses and what it hides. The deny list reads the command as
 * sh would (exec-policy-parse.ts: quoting, escapes and known variables
 * removed), unwraps `sudo`, `env`, `xargs`, `timeout`… and looks inside
 * `sh -c`, `bash -c`, `eval`, here-documents and command substitutions,
 * then applies the rules of exec-policy-rules.ts: catastrophic ones always,
 * the guard (writes outside the workspace, killing magpie, reading secrets)
 * when no sandbox contains the command. Also the scrubbing of secrets from
 * the environment a command sees when it runs without a sandbox.
 */
import os from 'node:os';
import path from 'node:path';
import { isSecretEnvName } from '../config/secret-env.js';
import { WORKSPACE_ID_FILE } from '../workspace/identity.js';
import { MEMORY_HISTORY_DIR } from '../workspace/workspace-path.js';
import { parseShell, type ShellCommand, type ShellWord } from './exec-policy-parse.js';
import type { PathScope } from './exec-policy-paths.js';
import { catastrophic, guard, type Invocation, SHELLS, suppliedCode } from './exec-policy-rules.js';

/** How much the deny list judges. */
export interface PolicyOptions {
  /**
   * `guard`: no sandbox, so everything is judged; `courtesy`: the command runs
   * in a sandbox, so only catastrophic commands are refused.
   * @defaultValue 'guard'
   */
  level?: 'guard' | 'courtesy';
  /** The workspace (real path). Without it, where writes go is not judged. */
  workspace?: string;
  /** Files and folders no command may name (magpie's `.env`, its state folder). @defaultValue [] */
  protectedPaths?: readonly string[];
  /** Folders and files in the workspace commands may not change. @defaultValue ['<workspace>/sessions', '<workspace>/.memory-history', '<workspace>/.magpie-id'] */
  readOnly?: readonly string[];
  /** Processes no command may kill. @defaultValue magpie's pid and its parent's */
  protectedPids?: readonly number[];
}

/** The classic fork bomb, judged on the text (with quotes removed): `:(){ :|:& };:`. */
const COLON_FORK_BOMB = /:\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}/;
/** A function definition's head, up to its `{`. */
const FUNCTION_HEAD = /\b(\w+)\s*\(\s*\)\s*\{/g;
/** `name | name &`. */
const SELF_PIPE = /\b(\w+)\s*\|\s*\1\s*&/g;

/**
 * Commands longer than this are refused unread: the model has no need for them
 * (long code goes in a file), and the checks must stay fast on the event loop.
 */
export const MAX_COMMAND_CHARS = 64 * 1024;

/** Nesting (sh -c inside eval inside $(…)) deeper than this is refused rather than judged. */
const MAX_DEPTH = 8;

const KEYWORDS = new Set([
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'do',
  'done',
  'while',
  'until',
  'for',
  'case',
  'esac',
  '!',
  '{',
  '}',
  'time',
  'coproc',
  'function',
]);
/** Prefixes that run the rest of the line as a command, with the options that take a value. */
const WRAPPERS: Record<string, RegExp> = {
  sudo: /^-[ughpCDrtUT]$/,
  doas: /^-[uC]$/,
  exec: /^-a$/,
  nohup: /^$/,
  builtin: /^$/,
  setsid: /^$/,
  unbuffer: /^$/,
  busybox: /^$/,
  time: /^$/,
  stdbuf: /^-[ioe]$/,
  nice: /^-n$/,
  ionice: /^-[cnpP]$/,
  chrt: /^$/,
  taskset: /^$/,
  xargs: /^-[IdEsnPLa]$|^--(?:replace|delimiter|eof|max-args|max-procs|max-lines|arg-file)$/,
  env: /^-[uCS]$|^--(?:unset|chdir|split-string)$/,
  timeout: /^-[sk]$|^--(?:signal|kill-after)$/,
};

interface Scan {
  level: 'guard' | 'courtesy';
  scope: PathScope;
  pids: readonly number[];
  vars: Map<string, string>;
  depth: number;
}

/**
 * The reason `command` is refused, or undefined when it may run.
 *
 * @example
 * denyReason('r""m -rf build')                     // → 'recursive forced delete (rm -rf)'
 * denyReason('echo x > /etc/motd', { workspace })  // → 'writing or deleting outside the workspace'
 * denyReason('ls -la')                             // → undefined
 */
export function denyReason(command: string, options: PolicyOptions = {}): string | undefined {
  if (command.length > MAX_COMMAND_CHARS) {
    return `a command longer than ${MAX_COMMAND_CHARS / 1024} KiB cannot be checked; write long code to a file and run the file`;
  }
  const workspace = options.workspace;
  const scan: Scan = {
    level: options.level ?? 'guard',
    scope: {
      workspace,
      cwd: workspace,
      home: os.homedir(),
      protectedPaths: (options.protectedPaths ?? []).map((p) => path.resolve(p)),
      readOnly:
        options.readOnly ??
        (workspace
          ? [
              path.join(workspace, 'sessions'),
              path.join(workspace, MEMORY_HISTORY_DIR),
              path.join(workspace, WORKSPACE_ID_FILE),
            ]
          : []),
    },
    pids: options.protectedPids ?? [process.pid, process.ppid],
    vars: new Map(),
    depth: 0,
  };
  return check(command, scan);
}

function check(text: string, scan: Scan): string | undefined {
  if (scan.depth > MAX_DEPTH) return 'commands nested too deeply to check';
  const unquoted = text.replace(/\\\n/g, '').replace(/["'\\]/g, '');
  if ([text, unquoted].some((t) => COLON_FORK_BOMB.test(t) || namedForkBomb(t))) return 'a fork bomb';
  const parsed = parseShell(text, scan.vars);
  const inner = (code: string) => check(code, { ...scan, depth: scan.depth + 1, scope: { ...scan.scope } });
  for (const substitution of parsed.substitutions) {
    const reason = inner(substitution);
    if (reason) return reason;
  }
  for (const command of parsed.commands) {
    const reason = checkCommand(command, scan, inner);
    if (reason) return reason;
  }
  return undefined;
}

/**
 * Whether `text` defines a function whose body (before any `}`) pipes it into
 * itself in the background: `f(){ f|f& };f`. One pass over the definitions and
 * the self-pipes in order (the single regex `\b(\w+)\s*\(\s*\)\s*\{[^}]*\b\1…`
 * took seconds on `a(){` repeated).
 */
function namedForkBomb(text: string): boolean {
  const pipes = [...text.matchAll(SELF_PIPE)];
  if (pipes.length === 0) return false;
  const heads = [...text.matchAll(FUNCTION_HEAD)];
  /** Where the latest definition of each name opened its body. */
  const opened = new Map<string, number>();
  let head = 0;
  let lastClose = -1;
  let nextClose = text.indexOf('}');
  for (const pipe of pipes) {
    for (; head < heads.length && (heads[head]?.index ?? 0) < pipe.index; head++) {
      const h = heads[head] as RegExpExecArray;
      opened.set(h[1] as string, h.index + h[0].length - 1);
    }
    while (nextClose !== -1 && nextClose < pipe.index) {
      lastClose = nextClose;
      nextClose = text.indexOf('}', nextClose + 1);
    }
    const body = opened.get(pipe[1] as string);
    if (body !== undefined && body > lastClose) return true;
  }
  return false;
}

function checkCommand(
  command: ShellCommand,
  scan: Scan,
  inner: (code: string) => string | undefined,
): string | undefined {
  const { words, nested } = unwrap(command.words);
  for (const code of nested) {
    const reason = inner(code);
    if (reason) return reason;
  }
  const [first, ...args] = words;
  const program = first === undefined ? '-' : first.dynamic ? '' : (first.text.split('/').pop() ?? '');
  const inv: Invocation = { program, args, command };
  for (const code of shellCode(inv)) {
    const reason = inner(code);
    if (reason) return reason;
  }
  const reason =
    catastrophic(inv) ?? (scan.level === 'guard' ? guard(inv, scan.scope, scan.pids) : undefined);
  if (reason) return reason;
  if (program === 'cd' || program === 'pushd' || program === 'popd') follow(args, scan.scope);
  return undefined;
}

/** Strips assignments, keywords and wrappers (`sudo -u x`, `env -i`, `xargs -n1`…); `env -S`/`flock -c` text is nested code. */
function unwrap(input: ShellWord[]): { words: ShellWord[]; nested: string[] } {
  const words = [...input];
  const nested: string[] = [];
  for (;;) {
    while (words[0] && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0].text) || KEYWORDS.has(words[0].text)))
      words.shift();
    const name = words[0]?.text.split('/').pop() ?? '';
    if (name === 'command' && /^-[vV]$/.test(words[1]?.text ?? '')) return { words: [], nested };
    if (name === 'flock') {
      // flock [options] FILE (-c CMD | CMD ARGS…)
      words.shift();
      while (words[0]?.text.startsWith('-')) {
        const option = (words.shift() as ShellWord).text;
        if (/^-[wE]$|^--(?:timeout|wait|conflict-exit-code)$/.test(option)) words.shift();
      }
      words.shift();
      const c = words.findIndex((w) => w.text === '-c' || w.text === '--command');
      if (c >= 0) {
        if (words[c + 1]) nested.push((words[c + 1] as ShellWord).text);
        return { words: [], nested };
      }
      continue;
    }
    if (name === 'watch') {
      nested.push(
        words
          .slice(1)
          .filter((w) => !w.text.startsWith('-'))
          .map((w) => w.text)
          .join(' '),
      );
      return { words: [], nested };
    }
    const valued = name === 'command' ? /^$/ : WRAPPERS[name];
    if (!valued) return { words, nested };
    words.shift();
    while (
      words[0] &&
      (words[0].text.startsWith('-') || (name === 'env' && /^[A-Za-z_]\w*=/.test(words[0].text)))
    ) {
      const option = words.shift() as ShellWord;
      if (option.text === '--') break;
      if (name === 'env' && /^(?:-S|--split-string)(?:=|$)/.test(option.text)) {
        const value = option.text.includes('=')
          ? option.text.split('=').slice(1).join('=')
          : words.shift()?.text;
        if (value) nested.push(value);
      } else if (valued.test(option.text)) words.shift();
    }
    if (name === 'timeout') words.shift(); // the duration
    if (name === 'nice' && /^-\d+$/.test(words[0]?.text ?? '')) words.shift();
  }
}

/** The code a shell (`-c`, stdin) or `eval`/`su -c` runs, to be judged as a command line of its own. */
function shellCode(inv: Invocation): string[] {
  const { program, args } = inv;
  if (program === 'eval') return [args.map((a) => a.text).join(' ')];
  if (program === 'su' || program === 'runuser') {
    const c = args.findIndex((a) => a.text === '-c' || a.text === '--command');
    return c >= 0 && args[c + 1] ? [(args[c + 1] as ShellWord).text] : [];
  }
  if (!SHELLS.has(program)) return [];
  const c = args.findIndex((a) => /^-[a-zA-Z]*c[a-zA-Z]*$/.test(a.text));
  if (c >= 0) {
    const code = args.slice(c + 1).find((a) => !a.text.startsWith('-'));
    return code ? [code.text] : [];
  }
  // No -c: with a script file it runs that file (unseen here); without one it reads stdin.
  if (args.some((a) => !a.text.startsWith('-'))) return [];
  return suppliedCode({ ...inv, args: [] });
}

/** Follows `cd`/`pushd`/`popd`: the folder later relative paths start from (undefined when unknown). */
function follow(args: ShellWord[], scope: PathScope): void {
  const target = args.find((a) => !a.text.startsWith('-') || a.text === '-');
  if (!target) {
    scope.cwd = scope.home;
    return;
  }
  if (target.text === '-' || target.dynamic) {
    scope.cwd = /^\$\{?HOME\}?$/.test(target.raw) ? scope.home : undefined;
    return;
  }
  if (target.text.startsWith('~')) scope.cwd = path.join(scope.home, target.text.slice(1));
  else if (scope.cwd !== undefined || target.text.startsWith('/'))
    scope.cwd = path.resolve(scope.cwd ?? '/', target.text);
}

/** A copy of `env` without variables whose names suggest secrets, OPENAI_* and REDIS_URL. */
export function scrubEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && !isSecretEnvName(name)) out[name] = value;
  }
  return out;
}

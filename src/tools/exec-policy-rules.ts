/**
 * The deny rules exec applies to one simple command (its program and
 * arguments already unwrapped from `sudo`, `env`, `xargs`…). Catastrophic
 * rules hold in every mode: recursive forced deletes (rm -rf, find -delete,
 * interpreter one-liners), formatting and raw writes to disks, shutting the
 * machine down, chmod/chown of the whole tree. Guard rules hold without a
 * sandbox: killing magpie or every process, writing outside the workspace,
 * reading other processes' environments, `.env` and magpie's own files.
 */
import type { ShellCommand, ShellWord } from './exec-policy-parse.js';
import { BLOCK_DEVICE, type PathScope, secretRefusal, writeRefusal } from './exec-policy-paths.js';

/** A command after unwrapping: program name (basename; '' when it cannot be known) and arguments. */
export interface Invocation {
  program: string;
  args: ShellWord[];
  command: ShellCommand;
}

export const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'yash', 'posh', 'fish']);
export const INTERPRETERS =
  /^(?:python[\d.]*|pypy[\d.]*|node|nodejs|deno|bun|perl[\d.]*|ruby[\d.]*|php[\d.]*)$/;

/** Code that deletes a tree, in Python, Node, Perl or Ruby. */
const RECURSIVE_DELETE_CODE =
  /\b(?:rmtree|removedirs|remove_tree|rm_rf|rm_r|remove_dir|remove_entry(?:_secure)?|rimraf|emptyDirSync|removeSync)\b|\b(?:rm|rmdir|rmSync|rmdirSync)\s*\([\s\S]*?\brecursive\b|\brm\s+-[a-zA-Z]*(?:[rR][a-zA-Z]*f|f[a-zA-Z]*[rR])|['"]rm['"]\s*,\s*\[?\s*['"]-[a-zA-Z]*(?:[rR][a-zA-Z]*f|f[a-zA-Z]*[rR])/;

const SHUTDOWN = new Set(['shutdown', 'reboot', 'halt', 'poweroff']);
const FORMAT = /^(?:mkfs(?:\..+)?|mke2fs|mkswap|wipefs|mkdosfs|mkntfs)$/;
const PARTITION = new Set([
  'fdisk',
  'sfdisk',
  'cfdisk',
  'gdisk',
  'sgdisk',
  'parted',
  'shred',
  'blkdiscard',
  'badblocks',
]);
/** Programs whose file operands are written (or deleted). */
const WRITERS = new Set(['rm', 'rmdir', 'unlink', 'shred', 'truncate', 'touch', 'mkdir', 'tee', 'mv']);
/** Programs whose last operand (or -t DIR) is written. */
const COPIERS = new Set(['cp', 'install', 'ln', 'rsync', 'scp']);
const OWNERSHIP = new Set(['chmod', 'chown', 'chgrp', 'chattr', 'setfacl']);
const DELETERS = new Set(['rm', 'rmdir', 'unlink', 'shred']);
/** Processes a `pkill`/`killall` pattern must not aim at: magpie, its Redis, Node, pm2. */
/** pkill's options that select by user, group, parent, session or process group. */
const PKILL_BY_OWNER = /^-(?:[uUgGPs]|-(?:uid|euid|group|parent|session|pgroup))/;
const PROTECTED_NAMES = /node|magpie|redis|pm2|npm|bwrap|^\.\*?$|^\^?$/i;

const operands = (args: ShellWord[]): ShellWord[] => {
  const end = args.findIndex((a) => a.text === '--');
  return args.filter((a, i) => (end >= 0 && i > end) || (!a.text.startsWith('-') && a.text !== '--'));
};

/** True when rm's arguments ask for both recursive and forced removal. */
export function isRecursiveForcedRm(args: ShellWord[]): boolean {
  let recursive = false;
  let force = false;
  for (const { text } of args) {
    if (text === '--') break;
    if (text === '--recursive') recursive = true;
    else if (text === '--force') force = true;
    else if (/^-[a-zA-Z]+$/.test(text)) {
      if (/[rR]/.test(text)) recursive = true;
      if (text.includes('f')) force = true;
    }
  }
  return recursive && force;
}

/** The code an interpreter or shell is given: `-c`/`-e` text, here-documents, an echoed pipe. */
export function suppliedCode(inv: Invocation): string[] {
  const code = inv.args.map((a) => a.text);
  code.push(...inv.command.input);
  const from = inv.command.pipedFrom;
  const feeder = from?.words[0]?.text.split('/').pop();
  if (from && (feeder === 'echo' || feeder === 'printf'))
    code.push(
      from.words
        .slice(1)
        .map((w) => w.text)
        .join(' '),
    );
  return code;
}

/** Rules that hold in every mode. */
export function catastrophic(inv: Invocation): string | undefined {
  const { program, args, command } = inv;
  for (const r of command.redirects) {
    if (/>|<>/.test(r.op) && BLOCK_DEVICE.test(r.target.text)) return 'writing to a disk device';
  }
  if (program === 'rm' || program === '') {
    if (isRecursiveForcedRm(args)) return 'recursive forced delete (rm -rf)';
  }
  if (program === 'find') {
    if (args.some((a) => a.text === '-delete')) return 'deleting with find';
    const exec = args.findIndex((a) => /^-(?:exec|execdir|ok|okdir)$/.test(a.text));
    const runs = args[exec + 1]?.text.split('/').pop() ?? '';
    if (exec >= 0 && (DELETERS.has(runs) || runs === '')) return 'deleting with find';
  }
  if (INTERPRETERS.test(program) && suppliedCode(inv).some((code) => RECURSIVE_DELETE_CODE.test(code))) {
    return 'a recursive delete in an interpreter one-liner';
  }
  if (SHUTDOWN.has(program)) return 'shutting down or rebooting the machine';
  if ((program === 'init' || program === 'telinit') && /^[06]$/.test(args[0]?.text ?? '')) {
    return 'shutting down or rebooting the machine';
  }
  if (
    program === 'systemctl' &&
    args.some((a) => /^(?:poweroff|reboot|halt|kexec|suspend|hibernate)$/.test(a.text))
  ) {
    return 'shutting down or rebooting the machine';
  }
  if (FORMAT.test(program)) return 'formatting a disk';
  if (program === 'dd') {
    if (args.some((a) => /^of=/.test(a.text) && BLOCK_DEVICE.test(a.text.slice(3))))
      return 'writing to a disk device';
    if (args.some((a) => a.text.startsWith('if='))) return 'raw disk copies with dd';
  }
  if (PARTITION.has(program) && args.some((a) => a.text.startsWith('/dev/')))
    return 'rewriting a disk device';
  if ((WRITERS.has(program) || COPIERS.has(program)) && args.some((a) => BLOCK_DEVICE.test(a.text))) {
    return 'writing to a disk device';
  }
  const root = args.some((a) => a.text === '/' || a.text === '/*');
  if (OWNERSHIP.has(program) && root && args.some((a) => /^-[a-zA-Z]*R|^--recursive$/.test(a.text))) {
    return 'changing permissions or owners of the whole filesystem';
  }
  if (program === 'mv' && root) return 'moving the filesystem root';
  return undefined;
}

/** Rules that hold without a sandbox. `pids`: processes no command may kill. */
export function guard(inv: Invocation, scope: PathScope, pids: readonly number[]): string | undefined {
  const { program, args, command } = inv;
  const killing = killRefusal(program, args, pids);
  if (killing) return killing;
  for (const r of command.redirects) {
    const secret = secretRefusal(r.target, program, scope);
    if (secret) return secret;
    if (/>|<>/.test(r.op)) {
      const write = writeRefusal(r.target, scope);
      if (write) return write;
    }
  }
  for (const arg of args) {
    const secret = secretRefusal(arg, program, scope);
    if (secret) return secret;
  }
  // A program that cannot be known (`$x /etc/passwd`) may be a delete: its operands count as written.
  for (const target of program === '' ? operands(args) : writtenPaths(program, args)) {
    const write = writeRefusal(target, scope);
    if (write) return write;
  }
  return undefined;
}

/** The words a command writes to or deletes. */
function writtenPaths(program: string, args: ShellWord[]): ShellWord[] {
  const files = operands(args);
  const optionValues = (names: RegExp): ShellWord[] => {
    const out: ShellWord[] = [];
    args.forEach((a, i) => {
      const joined = /^(-[a-zA-Z]|--[a-z-]+)=(.+)$/.exec(a.text);
      if (joined && names.test(joined[1] as string)) out.push({ ...a, text: joined[2] as string });
      else if (names.test(a.text) && args[i + 1]) out.push(args[i + 1] as ShellWord);
    });
    return out;
  };
  if (WRITERS.has(program)) return program === 'truncate' ? files.filter((f) => !/^\d/.test(f.text)) : files;
  if (OWNERSHIP.has(program)) return files.slice(1);
  if (COPIERS.has(program)) {
    const target = optionValues(/^(?:-t|--target-directory)$/);
    return target.length > 0 ? target : files.slice(-1);
  }
  if (program === 'dd') {
    return args.filter((a) => a.text.startsWith('of=')).map((a) => ({ ...a, text: a.text.slice(3) }));
  }
  if (program === 'sed' && args.some((a) => /^-[a-zA-Z]*i|^--in-place/.test(a.text))) {
    const scripted = args.some((a) => /^-[ef]$|^--(?:expression|file)/.test(a.text));
    return scripted ? files : files.slice(1);
  }
  if (program === 'curl') return optionValues(/^(?:-o|--output|--output-dir)$/);
  if (program === 'wget') return optionValues(/^(?:-O|-P|-o|--output-document|--directory-prefix)$/);
  if (program === 'tar') return optionValues(/^(?:-C|--directory)$/);
  if (program === 'unzip') return optionValues(/^-d$/);
  return [];
}

/** Why a kill/pkill/killall aims at magpie or at every process, or undefined. */
function killRefusal(program: string, args: ShellWord[], pids: readonly number[]): string | undefined {
  if (program === 'killall5') return 'killing every process';
  if (program === 'kill') {
    const texts = args.map((a) => a.text);
    if (texts.length === 1 && texts[0] === '-1') return 'killing every process';
    let targets = args;
    const end = texts.indexOf('--');
    if (end >= 0) targets = args.slice(end + 1);
    else {
      targets = [];
      for (let i = 0; i < args.length; i++) {
        const t = texts[i] as string;
        if (t === '-s' || t === '-n') i++;
        else if (i === 0 && /^-(?:[A-Za-z]+|\d+)$/.test(t)) continue;
        else targets.push(args[i] as ShellWord);
      }
    }
    for (const t of targets) {
      if (/^-?[01]$/.test(t.text) || /^-\d+$/.test(t.text)) return 'killing every process or a process group';
      if (/PPID|pgrep|pidof|\bps\b|\/proc/.test(t.raw)) return 'killing magpie';
      if (/^\d+$/.test(t.text) && pids.includes(Number(t.text))) return 'killing magpie';
    }
  }
  if (program === 'pkill' || program === 'killall') {
    const byOwner = program === 'pkill' ? PKILL_BY_OWNER : /^-(?:u|-user)/;
    if (args.some((a) => byOwner.test(a.text))) return 'killing processes by user, group or parent';
    if (operands(args).some((a) => PROTECTED_NAMES.test(a.text))) return 'killing magpie, Redis or Node';
  }
  return undefined;
}

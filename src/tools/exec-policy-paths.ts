/**
 * Where the words of a command point, for exec's guard (no sandbox): the
 * absolute path a word names (after `cd`, `~`, `$HOME` and `../`), whether a
 * write there leaves the workspace, and whether a word reaches one of
 * magpie's own files (`.env`, the state folder) — literally, through a glob
 * such as `../.e*`, or through a folder that holds it (`grep -r KEY ..`).
 */
import path from 'node:path';
import { WORKSPACE_ID_FILE } from '../workspace/identity.js';
import type { ShellWord } from './exec-policy-parse.js';

/** What the path rules need to know. */
export interface PathScope {
  /** The workspace (real path); paths are not judged without it. */
  workspace: string | undefined;
  /** The folder commands run in at this point of the line; undefined after `cd` to somewhere unknown. */
  cwd: string | undefined;
  /** The home folder `~` and `$HOME` stand for. */
  home: string;
  /** magpie's own files and folders: no command may name them. */
  protectedPaths: readonly string[];
  /** Folders and files inside the workspace commands may read but not change (sessions/, .magpie-id). */
  readOnly: readonly string[];
}

/** Where a write is fine although outside the workspace: scratch folders and the standard streams. */
const WRITABLE_OUTSIDE = ['/tmp', '/var/tmp', '/dev/shm'];
const HARMLESS_DEVICES =
  /^\/(?:dev\/(?:null|zero|full|tty|stdout|stderr|stdin|fd\/\d+)|proc\/self\/fd\/\d+)$/;

/** A word's path: `{ path }`, `{ unknown: true }` when it cannot be told (a variable, an unknown folder). */
export type WordPath = { path: string } | { unknown: true };

const within = (child: string, parent: string): boolean =>
  child === parent || child.startsWith(parent.endsWith('/') ? parent : `${parent}/`);

/** The absolute path `word` names, from `scope.cwd`. */
export function resolveWord(word: ShellWord, scope: PathScope): WordPath {
  const home = /^(?:~|\$\{?HOME\}?)(?=\/|$)/.exec(word.raw.replace(/^["']/, ''));
  if (home) {
    const rest = word.text.replace(/^(?:~|\$\{?HOME\}?)/, '');
    return { path: path.join(scope.home, rest) };
  }
  if (word.dynamic) return { unknown: true };
  if (word.text.startsWith('/')) return { path: path.resolve(word.text) };
  if (scope.cwd === undefined) return { unknown: true };
  return { path: path.resolve(scope.cwd, word.text) };
}

/** Why a write to `word` is refused (outside the workspace, or into a read-only folder), or undefined. */
export function writeRefusal(word: ShellWord, scope: PathScope): string | undefined {
  if (scope.workspace === undefined) return undefined;
  const where = resolveWord(word, scope);
  if ('unknown' in where) {
    // A variable in the middle of a path cannot be judged; a folder unknown after `cd` can.
    return word.dynamic ? undefined : 'writing in a folder that cannot be told after cd';
  }
  const target = where.path;
  if (HARMLESS_DEVICES.test(target)) return undefined;
  const readOnly = scope.readOnly.find((dir) => within(target, dir));
  if (readOnly) {
    const name = path.basename(readOnly);
    return `changing ${name === WORKSPACE_ID_FILE ? name : `${name}/`} (read-only)`;
  }
  if (within(target, scope.workspace)) return undefined;
  if (WRITABLE_OUTSIDE.some((dir) => within(target, dir))) return undefined;
  return 'writing or deleting outside the workspace';
}

/** A glob (`*`, `?`, `[…]`) for one path segment as a RegExp; a leading `*`/`?` does not match a dot. */
function globRegExp(glob: string): RegExp {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === '*') out += i === 0 ? '(?!\\.)[^/]*' : '[^/]*';
    else if (c === '?') out += i === 0 ? '(?!\\.)[^/]' : '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) out += '\\[';
      else {
        out += `[${glob
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else out += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${out}$`);
}

const GLOB = /[*?[]/;

/** Programs that may name a folder holding magpie's files without reading what is in them. */
const HARMLESS_ON_FOLDERS = new Set([
  'cd',
  'pushd',
  'ls',
  'stat',
  'test',
  '[',
  'du',
  'df',
  'pwd',
  'realpath',
  'readlink',
  'dirname',
  'basename',
  'echo',
  'printf',
  'mkdir',
  'file',
  'git',
]);

/** A `.env` file, not its documented templates. */
const ENV_FILE = /^\.env(?:\..+)?$/;
const ENV_TEMPLATE = /\.(?:example|sample|template|dist)$/;

/** Why naming `word` in a command of `program` reaches magpie's secrets, or undefined. */
export function secretRefusal(word: ShellWord, program: string, scope: PathScope): string | undefined {
  const texts = [word.text, word.raw];
  if (texts.some((t) => /\/proc\/.*\/(?:environ|mem)\b|^\/dev\/k?mem$|^\/proc\/kcore$/.test(t))) {
    return "reading another process's environment or memory";
  }
  if (scope.cwd?.startsWith('/proc/') && /^(?:environ|mem)$/.test(word.text)) {
    return "reading another process's environment or memory";
  }
  const where = resolveWord(word, scope);
  const base = path.basename(word.text);
  const outside = 'unknown' in where || scope.workspace === undefined || !within(where.path, scope.workspace);
  if (ENV_FILE.test(base) && !ENV_TEMPLATE.test(base) && outside) return 'reading a .env file';
  if ('unknown' in where) return undefined;
  for (const secret of scope.protectedPaths) {
    if (within(where.path, secret)) return "reaching magpie's own files";
    if (within(secret, where.path) && !HARMLESS_ON_FOLDERS.has(program)) return "reaching magpie's own files";
    if (GLOB.test(base) && path.dirname(where.path) === path.dirname(secret)) {
      if (globRegExp(base).test(path.basename(secret))) return "reaching magpie's own files";
    }
  }
  return undefined;
}

/** Folders and devices no write may name. */
export const BLOCK_DEVICE =
  /^\/dev\/(?:sd|hd|vd|xvd|nvme|mmcblk|loop|dm-|md|nbd|sr\d|scd|ram|zram|mtd|ubi|rbd|bcache|pmem|nullb|sg\d|st\d|disk\/|mapper\/|block\/|root|k?mem$|port$)/;

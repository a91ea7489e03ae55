/**
 * The bubblewrap argument list for one exec command, and the parts of the
 * host it is built from: where bwrap and prlimit are, which system folders
 * are symlinks (merged /usr), which /etc entries programs need (an
 * allow-list: the command runs as a host user who can read it, so a whole /etc would
 * hand over /etc/shadow, TLS private keys, SSH host keys and package-manager
 * credentials), and the environment the command gets (an allow-list too, not
 * a scrub of magpie's).
 */
import { constants } from 'node:fs';
import { access, lstat, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';

/** A host path exposed read-only, or recreated as a symlink when `link` is set. */
export interface HostEntry {
  path: string;
  /** The symlink's target, when the entry is a symlink into /usr or /proc (recreated as such). */
  link?: string;
}

/** What of the host the sandbox shows: system folders and /etc entries. */
export interface HostLayout {
  system: HostEntry[];
  etc: HostEntry[];
}

/** Folders beside /usr that are symlinks into it on merged-/usr systems, folders elsewhere. */
const SYSTEM_DIRS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/**
 * The /etc entries programs need: users and groups (no password hashes, those
 * are in shadow), name resolution, the dynamic linker, time zone and locale,
 * CA certificates (not /etc/ssl/private), `alternatives` (the targets of
 * /usr/bin/awk and friends), MIME and terminal data, the OS release, Python's
 * and Perl's own configuration, fonts, and SSH's client configuration (not the
 * host keys). Entries ending in `*` match by prefix.
 */
export const ETC_ALLOW_LIST: readonly string[] = [
  'passwd',
  'group',
  'nsswitch.conf',
  'hosts',
  'host.conf',
  'resolv.conf',
  'gai.conf',
  'services',
  'protocols',
  'networks',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'timezone',
  'locale.alias',
  'locale.conf',
  'alternatives',
  'ssl/certs',
  'ssl/openssl.cnf',
  'ca-certificates',
  'ca-certificates.conf',
  'pki/tls/certs',
  'pki/tls/openssl.cnf',
  'pki/ca-trust/extracted',
  'mime.types',
  'magic',
  'magic.mime',
  'terminfo',
  'inputrc',
  'os-release',
  'lsb-release',
  'debian_version',
  'shells',
  'mtab',
  'python3*',
  'perl',
  'fonts',
  'ssh/ssh_config',
  'ssh/ssh_config.d',
];

/** Folders the command may run programs from; fixed, so nothing of a home folder (pyenv, cargo) is on it. */
export const SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin';

/** A symlink whose target lies in /usr or /proc (both present inside) is recreated; others are bound (followed). */
async function entry(file: string): Promise<HostEntry | undefined> {
  let stats: Awaited<ReturnType<typeof lstat>>;
  try {
    stats = await lstat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if (!stats.isSymbolicLink()) return { path: file };
  const target = await readlink(file);
  const resolved = path.resolve(path.dirname(file), target);
  return /^\/(usr|proc)\//.test(resolved) ? { path: file, link: target } : { path: file };
}

/** True when `file` exists and may be run. */
export async function executable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return true;
  } catch (err) {
    if (['ENOENT', 'EACCES', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '')) return false;
    throw err;
  }
}

/** The first executable `name` in the system folders, then in `extra` (PATH). */
export async function findProgram(name: string, extra: string[] = []): Promise<string | undefined> {
  for (const dir of ['/usr/bin', '/usr/local/bin', '/bin', ...extra]) {
    const file = path.join(dir, name);
    if (await executable(file)) return file;
  }
  return undefined;
}

/** Reads which system folders and allowed /etc entries exist on this host, and how. */
export async function readHostLayout(etcDir = '/etc'): Promise<HostLayout> {
  const system = (await Promise.all(SYSTEM_DIRS.map(entry))).filter((e): e is HostEntry => e !== undefined);
  const names = new Set<string>();
  const listing = await readdir(etcDir);
  for (const allowed of ETC_ALLOW_LIST) {
    if (allowed.endsWith('*')) {
      for (const name of listing) if (name.startsWith(allowed.slice(0, -1))) names.add(name);
    } else {
      names.add(allowed);
    }
  }
  const etc = (await Promise.all([...names].sort().map((name) => entry(path.join(etcDir, name))))).filter(
    (e): e is HostEntry => e !== undefined,
  );
  return { system, etc };
}

/** The environment inside the sandbox, built from nothing: PATH, HOME, LANG, TZ and TERM. */
export function sandboxEnv(options: {
  home: string;
  lang?: string;
  timezone?: string;
}): Record<string, string> {
  const safe = (value: string | undefined, fallback: string) =>
    value && /^[A-Za-z0-9_.@+/:-]+$/.test(value) ? value : fallback;
  return {
    PATH: SANDBOX_PATH,
    HOME: options.home,
    LANG: safe(options.lang, 'C.UTF-8'),
    TZ: safe(options.timezone, 'UTC'),
    TERM: 'dumb',
  };
}

/** Everything one bwrap run needs besides the host layout. */
export interface BwrapArgsInput {
  layout: HostLayout;
  /** The workspace's real path: bound at the same path (read-write unless `workspaceReadOnly`), and the working folder. */
  workspace: string;
  /** Bind the workspace read-only (MAGPIE_SANDBOX_MODE=read-only). @defaultValue false */
  workspaceReadOnly?: boolean;
  /**
   * Real paths of folders outside the workspace bound read-write at the same path
   * (MAGPIE_WRITABLE_ROOTS), after the system's read-only binds. @defaultValue []
   */
  writableRoots?: readonly string[];
  /** Share the host's network (otherwise a new network namespace with only loopback). */
  network: boolean;
  /** Existing folders inside the workspace bound again read-only over themselves (sessions/). */
  readOnly: string[];
  /** Paths inside the workspace hidden: a folder becomes an empty read-only tmpfs, a file /dev/null. */
  masked: Array<{ path: string; directory: boolean }>;
  env: Record<string, string>;
  /** Size of the private /tmp and of /dev/shm, each, in bytes. */
  tmpBytes: number;
  /** Options this bwrap has (0.8 added --disable-userns; --size came with 0.5). */
  features: { disableUserns: boolean; tmpfsSize: boolean };
  /**
   * magpie runs as root: no user namespace (its uid 0 would be host root);
   * bwrap keeps only CAP_SETUID and CAP_SETGID, for `setpriv` at the head of
   * `command` to drop to an unprivileged host user, which leaves none.
   */
  asRoot?: boolean;
  /** The file descriptor bwrap reads a seccomp filter from (`--seccomp`), when there is one. */
  seccompFd?: number;
  /** What runs inside, after `--`. */
  command: string[];
}

/**
 * The bwrap arguments, in mount order (later mounts cover earlier ones).
 *
 * @example
 * spawn(bwrapPath, bwrapArgs({ …, command: ['/bin/sh', '-c', 'ls'] }), { env: { PATH: SANDBOX_PATH } })
 */
export function bwrapArgs(input: BwrapArgsInput): string[] {
  const asRoot = input.asRoot === true;
  const args = [
    ...(asRoot ? [] : ['--unshare-user']),
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(input.network ? [] : ['--unshare-net']),
    ...(input.features.disableUserns && !asRoot ? ['--disable-userns'] : []),
    '--die-with-parent',
    '--new-session',
    // bwrap keeps every capability in the sandbox when started by root; without
    // them the sandbox cannot remount its read-only binds writable.
    '--cap-drop',
    'ALL',
    ...(asRoot ? ['--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID'] : []),
    '--hostname',
    'magpie-sandbox',
    '--ro-bind',
    '/usr',
    '/usr',
  ];
  if (asRoot && input.features.tmpfsSize) {
    // bwrap run by root makes the folders above its binds 0700 (root's): make /etc and its
    // sub-folders readable for the user the command runs as. (--perms came with --size, in 0.5.)
    const dirs = new Set<string>();
    for (const e of input.layout.etc) {
      for (let dir = path.dirname(e.path); dir !== '/' && dir !== '.'; dir = path.dirname(dir)) dirs.add(dir);
    }
    for (const dir of [...dirs].sort()) args.push('--perms', '0755', '--dir', dir);
  }
  for (const e of [...input.layout.system, ...input.layout.etc]) {
    if (e.link !== undefined) args.push('--symlink', e.link, e.path);
    else args.push('--ro-bind-try', e.path, e.path);
  }
  const size = (bytes: number) => (input.features.tmpfsSize ? ['--size', String(bytes)] : []);
  // /proc/sys and /proc/sysrq-trigger read-only whoever runs inside (bwrap's own
  // check misses /proc/sys); /sys is not mounted at all.
  args.push('--proc', '/proc', '--ro-bind', '/proc/sys', '/proc/sys');
  args.push('--ro-bind-try', '/proc/sysrq-trigger', '/proc/sysrq-trigger', '--dev', '/dev');
  // Sticky and writable for everyone, as on the host (as root bwrap would make them 0755 root's).
  const sticky = input.features.tmpfsSize ? ['--perms', '1777'] : [];
  args.push(...sticky, ...size(input.tmpBytes), '--tmpfs', '/dev/shm');
  args.push(...sticky, ...size(input.tmpBytes), '--tmpfs', '/tmp');
  const writable = input.writableRoots ?? [];
  if (asRoot && input.features.tmpfsSize) {
    // The folders bwrap makes above the workspace and the writable roots would be 0700 root's too
    // (sorted: a folder comes before the folders inside it).
    const above = new Set<string>();
    for (const top of [input.workspace, ...writable]) {
      for (let dir = path.dirname(top); dir !== '/'; dir = path.dirname(dir)) above.add(dir);
    }
    for (const dir of [...above].sort()) if (dir !== '/tmp') args.push('--perms', '0755', '--dir', dir);
  }
  args.push(input.workspaceReadOnly ? '--ro-bind' : '--bind', input.workspace, input.workspace);
  for (const dir of input.readOnly) args.push('--ro-bind', dir, dir);
  for (const m of input.masked) {
    if (m.directory) args.push('--tmpfs', m.path, '--remount-ro', m.path);
    else args.push('--ro-bind', '/dev/null', m.path);
  }
  // Like the workspace, bwrap makes these binds nosuid and nodev.
  for (const dir of writable) args.push('--bind', dir, dir);
  // As root bwrap has no CAP_DAC_OVERRIDE left, so the command changes folder itself once it is the user.
  args.push('--remount-ro', '/', ...(asRoot ? [] : ['--chdir', input.workspace]), '--clearenv');
  for (const [name, value] of Object.entries(input.env)) args.push('--setenv', name, value);
  if (input.seccompFd !== undefined) args.push('--seccomp', String(input.seccompFd));
  args.push('--', ...input.command);
  return args;
}

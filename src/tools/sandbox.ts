/**
 * exec's sandbox: each command runs under bubblewrap in new pid, ipc, uts,
 * cgroup and (unless MAGPIE_EXEC_NETWORK=on) network namespaces, with the
 * system and /proc/sys read-only, the workspace read-write (nosuid; read-only
 * with MAGPIE_SANDBOX_MODE=read-only), sessions/ (and .magpie-id) read-only,
 * the writable roots read-write, a private /tmp, an allow-listed /etc and
 * environment, and limits on processes, memory, CPU time and file size. As a
 * normal user it adds a user namespace; as root it has none and drops the
 * command to an unprivileged host user (sandbox-user.ts), never host root. `resolveSandbox` settles
 * MAGPIE_EXEC_SANDBOX (auto, bwrap, off) with a probe run.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { lstat, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { Config } from '../config/index.js';
import { ConfigError } from '../errors/index.js';
import { WORKSPACE_ID_FILE } from '../workspace/identity.js';
import { MEMORY_HISTORY_DIR } from '../workspace/workspace-path.js';
import {
  bwrapArgs,
  executable,
  findProgram,
  type HostLayout,
  readHostLayout,
  SANDBOX_PATH,
  sandboxEnv,
} from './sandbox-args.js';
import { type CommandCgroup, openPidsCgroups, type PidsCgroups } from './sandbox-cgroup.js';
import { type ProbeRecord, probeKey, readProbe, writeProbe } from './sandbox-probe-cache.js';
import { DENIED_CALLS, seccompFilter } from './sandbox-seccomp.js';
import { DEFAULT_EXEC_USER, type ExecUser, handOverWorkspace, lookUpExecUser } from './sandbox-user.js';

/** MAGPIE_EXEC_SANDBOX: `auto` (bwrap when it works, else exec disabled), `bwrap` (required) or `off`. */
export type SandboxMode = 'auto' | 'bwrap' | 'off';

/** Limits of every sandboxed command. */
export interface SandboxLimits {
  /** Processes and threads at once (RLIMIT_NPROC; a pids cgroup when magpie runs as root). @defaultValue 256 */
  processes: number;
  /** Largest file a command may write, in bytes (RLIMIT_FSIZE; MAGPIE_EXEC_MAX_WRITE). @defaultValue 256 MiB */
  fileSizeBytes: number;
  /** Memory of one command, in bytes (cgroup v2 memory.max, else RLIMIT_AS; MAGPIE_EXEC_MEMORY). @defaultValue 1 GiB */
  memoryBytes: number;
  /** Size of the private /tmp and of /dev/shm, each, in bytes. @defaultValue 512 MiB */
  tmpBytes: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  processes: 256,
  fileSizeBytes: 256 * 1024 ** 2,
  memoryBytes: 1024 ** 3,
  tmpBytes: 512 * 1024 ** 2,
};

export interface BwrapSandboxOptions {
  /** The workspace's real path. */
  workspace: string;
  /** Share the host's network. @defaultValue false */
  network?: boolean;
  /**
   * Bind the whole workspace read-only (MAGPIE_SANDBOX_MODE=read-only); its files are then
   * not handed over to the exec user when magpie runs as root. @defaultValue false
   */
  workspaceReadOnly?: boolean;
  /**
   * Real paths of folders outside the workspace that commands may also write
   * (MAGPIE_WRITABLE_ROOTS), bound read-write at the same path; never handed over (chowned):
   * the user commands run as must be able to write them. @defaultValue []
   */
  writableRoots?: readonly string[];
  /** Folders inside the workspace made read-only (made when missing). @defaultValue ['<workspace>/sessions', '<workspace>/.memory-history'] */
  readOnly?: string[];
  /** Paths hidden when they lie inside the workspace (magpie's data, `.env`). @defaultValue ['<workspace>/.redis'] */
  hidden?: string[];
  /** TZ inside. @defaultValue 'UTC' */
  timezone?: string;
  /** LANG inside. @defaultValue process.env.LANG, else 'C.UTF-8' */
  lang?: string;
  limits?: Partial<SandboxLimits>;
  /** The bwrap program. @defaultValue the first bwrap in /usr/bin, /usr/local/bin, /bin, then PATH */
  bwrapPath?: string;
  /**
   * When magpie runs as root: the unprivileged host user (name or uid) commands run as.
   * @defaultValue 'nobody'
   */
  execUser?: string;
  /**
   * Where a successful probe is remembered (in magpie's state folder), so later starts skip it.
   * @defaultValue none: probe at every start
   */
  probeCache?: string;
}

/** A command ready to spawn (`detached`, so its process group can be killed) and what to release after it. */
export interface PreparedCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
  /** The seccomp filter bwrap reads from fd 3 ({@link SECCOMP_FD}): spawn with {@link preparedStdio}, then {@link sendSeccomp}. */
  seccomp?: Buffer;
  /** Kills whatever is left of the command and removes its cgroup. */
  release(): Promise<void>;
}

function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { env: { PATH: SANDBOX_PATH }, timeout: 5_000 }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(err, { stderr: String(stderr) }));
      else resolve(String(stdout) + String(stderr));
    });
  });
}

/** The file descriptor the seccomp filter reaches bwrap on. */
export const SECCOMP_FD = 3;

/** The stdio of a prepared command: `base` (stdin, stdout, stderr), and a pipe for its seccomp filter. */
export function preparedStdio(
  prepared: PreparedCommand,
  base: Array<'ignore' | 'pipe'>,
): Array<'ignore' | 'pipe'> {
  return prepared.seccomp ? [...base, 'pipe'] : base;
}

/** Writes the prepared command's seccomp filter to the child spawned with {@link preparedStdio}. */
export function sendSeccomp(child: ChildProcess, prepared: PreparedCommand): void {
  if (!prepared.seccomp) return;
  const pipe = child.stdio[SECCOMP_FD] as Writable | null;
  // A bwrap that failed before reading it closes the pipe: its own exit says why.
  pipe?.on('error', () => {});
  pipe?.end(prepared.seccomp);
}

/** What a sandbox found on this host when it was made. */
interface SandboxParts {
  version: string;
  bwrap: string;
  prlimit: string;
  layout: HostLayout;
  features: { disableUserns: boolean; tmpfsSize: boolean };
  limits: SandboxLimits;
  /** Set when magpie runs as root: the process limit comes from a pids cgroup. */
  cgroups: PidsCgroups | undefined;
  processLimit: string;
  /** Set when magpie runs as root: the host user commands run as, and setpriv to become it. */
  runAs: { user: ExecUser; setpriv: string } | undefined;
  /** The seccomp filter for this architecture (none where there is no table for it). */
  seccomp: Buffer | undefined;
  /** probeKey() of this bwrap, when probes are remembered. */
  key: string;
  remembered: ProbeRecord | undefined;
}

/** A bubblewrap sandbox for one workspace. Make it with {@link BwrapSandbox.create}. */
export class BwrapSandbox {
  /** bwrap's version, e.g. "0.8.0". */
  readonly version: string;
  /** Whether commands share the host's network. */
  readonly network: boolean;
  /** Whether the workspace is bound read-only (MAGPIE_SANDBOX_MODE=read-only). */
  readonly workspaceReadOnly: boolean;
  /** Folders outside the workspace commands may also write (MAGPIE_WRITABLE_ROOTS). */
  readonly writableRoots: readonly string[];
  readonly limits: SandboxLimits;
  /** How the process limit is enforced, e.g. "processes ≤256 (pids cgroup v1)", for doctor and the logs. */
  readonly processLimit: string;
  /** A remembered probe of this bwrap on this kernel succeeded: no need to probe again. */
  readonly probedBefore: boolean;
  /** How memory is limited, e.g. "memory ≤1024 MiB (cgroup v2 memory.max)", for doctor and the logs. */
  readonly memoryLimit: string;
  /** Commands prepared and not yet released (the workspace is handed over only when none runs). */
  private running = 0;

  private constructor(
    private readonly parts: SandboxParts,
    private readonly options: BwrapSandboxOptions,
  ) {
    this.version = parts.version;
    this.network = options.network ?? false;
    this.workspaceReadOnly = options.workspaceReadOnly ?? false;
    this.writableRoots = options.writableRoots ?? [];
    this.limits = parts.limits;
    this.processLimit = parts.processLimit;
    this.probedBefore = parts.remembered !== undefined;
    const mib = `${Math.round(parts.limits.memoryBytes / 1024 ** 2)} MiB`;
    this.memoryLimit = parts.cgroups?.memory
      ? `memory ≤${mib} (cgroup v2 memory.max)`
      : `memory ≤${mib} of address space (RLIMIT_AS)`;
  }

  /**
   * Finds bwrap and prlimit and reads the host's layout; does not run
   * anything in a sandbox (see {@link BwrapSandbox.probe}).
   *
   * @throws ConfigError when bwrap or prlimit is missing.
   */
  static async create(options: BwrapSandboxOptions): Promise<BwrapSandbox> {
    const pathDirs = (process.env.PATH ?? '').split(':').filter((d) => d.startsWith('/'));
    const bwrap = options.bwrapPath ?? (await findProgram('bwrap', pathDirs));
    if (!bwrap || !(await executable(bwrap))) {
      throw new ConfigError(
        `bwrap not found${bwrap ? ` at ${bwrap}` : ''} (install it: apt-get install bubblewrap)`,
      );
    }
    // prlimit runs inside the sandbox, so it must come from the read-only system folders.
    const prlimit = await findProgram('prlimit');
    if (!prlimit) throw new ConfigError('prlimit not found in /usr/bin or /bin (install util-linux)');
    const key = options.probeCache ? await probeKey(bwrap) : '';
    const remembered = options.probeCache ? await readProbe(options.probeCache, key) : undefined;
    const [versionText, help, layout] = await Promise.all([
      remembered ? remembered.version : run(bwrap, ['--version']),
      remembered ? '' : run(bwrap, ['--help']),
      readHostLayout(),
    ]);
    const limits = { ...DEFAULT_SANDBOX_LIMITS, ...options.limits };
    let runAs: SandboxParts['runAs'];
    if (process.getuid?.() === 0) {
      // Never host root: bwrap starts as root, setpriv (from the read-only /usr) drops to this user inside.
      const setpriv = await findProgram('setpriv');
      if (!setpriv) throw new ConfigError('setpriv not found in /usr/bin or /bin (install util-linux)');
      runAs = { user: await lookUpExecUser(options.execUser ?? DEFAULT_EXEC_USER), setpriv };
    }
    let cgroups: PidsCgroups | undefined;
    let processLimit = `processes ≤${limits.processes} (RLIMIT_NPROC in the sandbox's user namespace)`;
    if (process.getuid?.() === 0) {
      // Root is exempt from RLIMIT_NPROC (the sandbox's uid maps to root): only a pids cgroup stops a fork bomb.
      const found = await openPidsCgroups();
      if ('unavailable' in found) {
        processLimit = `processes unlimited: magpie runs as root and no pids cgroup is writable (${found.unavailable})`;
      } else {
        cgroups = found;
        processLimit = `processes ≤${limits.processes} (pids cgroup ${found.kind})`;
      }
    }
    const parts: SandboxParts = {
      version: /(\d+\.\d+(?:\.\d+)?)/.exec(versionText)?.[1] ?? 'unknown',
      bwrap,
      prlimit,
      layout,
      features: remembered?.features ?? {
        disableUserns: help.includes('--disable-userns'),
        tmpfsSize: help.includes('--size'),
      },
      limits,
      key,
      remembered,
      cgroups,
      processLimit,
      runAs,
      seccomp: seccompFilter(),
    };
    return new BwrapSandbox(parts, options);
  }

  /** True when a fork bomb is stopped by a process limit. */
  get limitsProcesses(): boolean {
    return this.parts.cgroups !== undefined || process.getuid?.() !== 0;
  }

  /** The host user commands run as: magpie's own, or the unprivileged one a root magpie drops to. */
  get user(): { uid: number; name: string; dropped: boolean } {
    const { runAs } = this.parts;
    if (runAs) return { uid: runAs.user.uid, name: runAs.user.name, dropped: true };
    return { uid: process.getuid?.() ?? -1, name: "magpie's own user", dropped: false };
  }

  /**
   * One line for logs and doctor, e.g. "bwrap 0.8.0, network off, mode workspace-write
   * (workspace read-write), writable roots none, processes ≤256 (…)".
   */
  describe(): string {
    const { user } = this;
    const who = user.dropped
      ? `runs as host uid ${user.uid} (${user.name}, no capabilities; magpie is root), new pid/ipc/uts/mount namespaces`
      : `runs as host uid ${user.uid} (magpie's user) in a user namespace, new pid/ipc/uts/mount namespaces`;
    const filter = this.parts.seccomp
      ? `seccomp filter (${DENIED_CALLS.length} system calls and new namespaces refused)`
      : `no seccomp filter (none for ${process.arch})`;
    const access = this.workspaceReadOnly
      ? 'mode read-only (workspace read-only)'
      : 'mode workspace-write (workspace read-write)';
    const roots = `writable roots ${this.writableRoots.length > 0 ? this.writableRoots.join(', ') : 'none'}`;
    return `bwrap ${this.version}, network ${this.network ? 'on' : 'off'}, ${access}, ${roots}, ${this.processLimit}, ${this.memoryLimit}, files ≤${Math.round(this.limits.fileSizeBytes / 1024 ** 2)} MiB each, ${who}, ${filter}`;
  }

  /**
   * Prepares `command` (POSIX sh) to run in the sandbox with `cpuSeconds` of
   * CPU time. Makes sessions/ when missing so it can be bound read-only.
   *
   * @throws ConfigError when a read-only folder or a writable root is a symlink or not a folder.
   */
  async prepare(command: string, cpuSeconds: number): Promise<PreparedCommand> {
    const { workspace } = this.options;
    const readOnly = this.options.readOnly ?? [
      path.join(workspace, 'sessions'),
      path.join(workspace, MEMORY_HISTORY_DIR),
    ];
    for (const dir of readOnly) {
      await mkdir(dir, { recursive: true });
      if (!(await lstat(dir)).isDirectory())
        throw new ConfigError(`${dir} is not a folder (a symlink?): exec will not run until it is one`);
    }
    for (const dir of this.writableRoots) {
      // Checked at start-up too; a root swapped for a symlink since would be followed by the bind.
      const stats = await lstat(dir).catch(() => undefined);
      if (!stats?.isDirectory())
        throw new ConfigError(
          `the writable root ${dir} is no longer a folder (a symlink, or gone): exec will not run until it is one, or until it is taken off MAGPIE_WRITABLE_ROOTS`,
        );
    }
    const masked: Array<{ path: string; directory: boolean }> = [];
    for (const hidden of this.options.hidden ?? [path.join(workspace, '.redis')]) {
      if (!hidden.startsWith(`${workspace}${path.sep}`)) continue; // outside: not mounted at all
      const stats = await lstat(hidden).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return undefined;
        throw err;
      });
      if (stats && !stats.isSymbolicLink()) masked.push({ path: hidden, directory: stats.isDirectory() });
    }
    // The workspace's id file, when there is one, is bound read-only over itself like sessions/
    // (a bind-mounted file can be neither changed, removed nor renamed).
    const idFile = path.join(workspace, WORKSPACE_ID_FILE);
    const idStats = await lstat(idFile).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    const readOnlyPaths = idStats?.isFile() ? [...readOnly, idFile] : readOnly;
    const { limits, parts } = this;
    const { runAs } = parts;
    // While no other command runs, nothing in the sandbox can race the walk. A read-only
    // workspace is left as it is: commands only read it.
    if (runAs && this.running === 0 && !this.workspaceReadOnly) {
      await handOverWorkspace(workspace, runAs.user, [...readOnlyPaths, ...masked.map((m) => m.path)]);
    }
    const drop = runAs
      ? [
          runAs.setpriv,
          `--reuid=${runAs.user.uid}`,
          `--regid=${runAs.user.gid}`,
          '--clear-groups',
          '--no-new-privs',
          '--inh-caps=-all',
          '/bin/sh',
          '-c',
          'cd -- "$0" && unset OLDPWD && exec "$@"',
          workspace,
        ]
      : [];
    const inner = [
      ...drop,
      parts.prlimit,
      `--nproc=${limits.processes}`,
      `--cpu=${Math.max(1, Math.ceil(cpuSeconds))}`,
      `--fsize=${limits.fileSizeBytes}`,
      // Without a memory cgroup, the address space stands in for memory (generous programs reserve more than they use).
      ...(parts.cgroups?.memory ? [] : [`--as=${limits.memoryBytes}`]),
      '--core=0',
      '--',
      '/bin/sh',
      '-c',
      command,
    ];
    const args = bwrapArgs({
      layout: parts.layout,
      workspace,
      workspaceReadOnly: this.workspaceReadOnly,
      writableRoots: this.writableRoots,
      network: this.network,
      readOnly: readOnlyPaths,
      masked,
      env: sandboxEnv({
        home: workspace,
        lang: this.options.lang ?? process.env.LANG,
        timezone: this.options.timezone,
      }),
      tmpBytes: limits.tmpBytes,
      features: parts.features,
      asRoot: runAs !== undefined,
      ...(parts.seccomp ? { seccompFd: SECCOMP_FD } : {}),
      command: inner,
    });
    const env = { PATH: SANDBOX_PATH };
    this.running++;
    let released = false;
    const done = (): void => {
      if (!released) this.running--;
      released = true;
    };
    const seccomp = parts.seccomp ? { seccomp: parts.seccomp } : {};
    if (!parts.cgroups) return { file: parts.bwrap, args, env, ...seccomp, release: async () => done() };
    let cgroup: CommandCgroup;
    try {
      cgroup = await parts.cgroups.create(limits.processes, limits.memoryBytes);
    } catch (err) {
      done();
      throw err;
    }
    // The wrapper joins the cgroup, then becomes bwrap: everything it starts is counted there.
    return {
      file: '/bin/sh',
      args: ['-c', 'echo $$ > "$0" && exec "$@"', cgroup.procsFile, parts.bwrap, ...args],
      env,
      ...seccomp,
      release: () => cgroup.close().finally(done),
    };
  }

  /**
   * Runs `exit 0` in the sandbox: resolves undefined when that works, else the
   * reason (bwrap's own message, e.g. user namespaces disabled).
   */
  async probe(): Promise<string | undefined> {
    const prepared = await this.prepare('exit 0', 5);
    let failure: string | undefined;
    try {
      failure = await new Promise<string | undefined>((resolve) => {
        const child = spawn(prepared.file, prepared.args, {
          env: prepared.env,
          stdio: preparedStdio(prepared, ['ignore', 'ignore', 'pipe']),
        });
        sendSeccomp(child, prepared);
        let stderr = '';
        (child.stderr as Readable).setEncoding('utf8').on('data', (chunk: string) => {
          stderr += chunk;
        });
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        child.once('error', (err) => {
          clearTimeout(timer);
          resolve(err.message);
        });
        child.once('close', (code, signal) => {
          clearTimeout(timer);
          const said = stderr.trim().split('\n')[0];
          resolve(code === 0 ? undefined : said || `exit ${code ?? signal}`);
        });
      });
    } finally {
      await prepared.release();
    }
    if (failure === undefined && this.options.probeCache) {
      const { version, features, key } = this.parts;
      await writeProbe(this.options.probeCache, { key, at: Date.now(), version, features });
    }
    return failure;
  }
}

/**
 * What MAGPIE_SANDBOX_MODE and MAGPIE_WRITABLE_ROOTS make of a sandbox's options: the
 * workspace bound read-only in read-only mode, the writable roots bound read-write.
 *
 * @example resolveSandbox(config.tools.execSandbox, { workspace, ...sandboxAccess(config) })
 */
export function sandboxAccess(
  config: Pick<Config, 'sandbox'>,
): Pick<BwrapSandboxOptions, 'workspaceReadOnly' | 'writableRoots'> {
  return {
    workspaceReadOnly: config.sandbox.mode === 'read-only',
    writableRoots: [...config.sandbox.writableRoots],
  };
}

/**
 * How exec runs: in a working sandbox; on the host with the deny list only
 * (MAGPIE_EXEC_SANDBOX=off, chosen knowingly); or not at all — `auto` found no
 * working sandbox, so exec is disabled (fails closed) and says why.
 */
export type SandboxStatus =
  | { kind: 'bwrap'; sandbox: BwrapSandbox }
  | { kind: 'off'; mode: 'off'; reason: string }
  | { kind: 'disabled'; mode: 'auto'; reason: string };

/** What a disabled exec says to the model instead of running anything. */
export const EXEC_DISABLED_MESSAGE =
  'exec is disabled: no sandbox could be started here (bubblewrap is missing or cannot run); the operator can install bubblewrap, or set MAGPIE_EXEC_SANDBOX=off to run commands unsandboxed';

/**
 * Settles MAGPIE_EXEC_SANDBOX: `off` → off (no sandbox, knowingly); `auto` →
 * a probed bwrap sandbox, else disabled with the reason (exec fails closed:
 * it runs nothing); `bwrap` → a probed sandbox or a ConfigError (exit 2).
 *
 * @example
 * const status = await resolveSandbox('auto', { workspace });
 * if (status.kind === 'disabled') logger.warn(`exec is disabled: ${status.reason}`);
 */
export async function resolveSandbox(
  mode: SandboxMode,
  options: BwrapSandboxOptions,
): Promise<SandboxStatus> {
  if (mode === 'off') return { kind: 'off', mode, reason: 'MAGPIE_EXEC_SANDBOX=off' };
  let reason: string;
  if (process.platform !== 'linux') {
    reason = `bubblewrap needs Linux (this is ${process.platform})`;
  } else {
    try {
      const sandbox = await BwrapSandbox.create(options);
      const failure = sandbox.probedBefore ? undefined : await sandbox.probe();
      if (failure === undefined) return { kind: 'bwrap', sandbox };
      reason = `bwrap cannot start a sandbox here: ${failure}`;
    } catch (err) {
      reason = (err as Error).message;
    }
  }
  if (mode === 'bwrap') {
    throw new ConfigError(`MAGPIE_EXEC_SANDBOX=bwrap but ${reason}; or set MAGPIE_EXEC_SANDBOX=auto`);
  }
  return { kind: 'disabled', mode, reason };
}

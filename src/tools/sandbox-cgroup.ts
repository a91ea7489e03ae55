/**
 * A pids cgroup per sandboxed command, for magpie running as root (with
 * `memory.max` too on cgroup v2 when the memory controller is there): the
 * kernel exempts root from RLIMIT_NPROC and RLIMIT_NPROC counts every process
 * of the (shared) unprivileged user commands run as, so there the process limit comes from
 * `pids.max` of a cgroup made for the command. Works with the cgroup v1 pids
 * hierarchy (a child of magpie's own cgroup) and with cgroup v2 (beside the
 * root, `<mount>/magpie-exec/…`). After the command everything left in its
 * cgroup is killed and the cgroup removed.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../errors/index.js';
import { pidExists } from '../lifecycle/pid-exists.js';

/** The cgroup made for one command. */
export interface CommandCgroup {
  /** Where a process writes its pid to join (`cgroup.procs`). */
  readonly procsFile: string;
  /** Kills whatever is left in the cgroup and removes it. Safe to call twice. */
  close(): Promise<void>;
}

/** Makes a cgroup with a process limit for each command. */
export interface PidsCgroups {
  readonly kind: 'v1' | 'v2';
  /** The folder the per-command cgroups are made in. */
  readonly parent: string;
  /** cgroup v2 with the memory controller: `create` also sets `memory.max`. */
  readonly memory: boolean;
  create(maxPids: number, memoryBytes?: number): Promise<CommandCgroup>;
}

/** A line of /proc/self/mountinfo, the fields this module needs. */
interface Mount {
  root: string;
  mountPoint: string;
  fsType: string;
  superOptions: string[];
}

/** Decodes the octal escapes mountinfo uses for spaces and the like (`\040`). */
const decodeOctal = (text: string): string =>
  text.replace(/\\([0-7]{3})/g, (_m, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));

function parseMountInfo(text: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const fields = left.split(' ');
    const [fsType, , superOptions] = right.split(' ');
    if (fields.length < 5 || !fsType) continue;
    mounts.push({
      root: decodeOctal(fields[3] ?? ''),
      mountPoint: decodeOctal(fields[4] ?? ''),
      fsType,
      superOptions: (superOptions ?? '').split(','),
    });
  }
  return mounts;
}

/** magpie's own cgroup in the hierarchy whose `/proc/self/cgroup` line lists `controller` ('' for v2). */
function ownCgroup(procCgroup: string, controller: string): string | undefined {
  for (const line of procCgroup.split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    const controllers = match[1] ?? '';
    if (controller === '' ? controllers === '' : controllers.split(',').includes(controller)) return match[2];
  }
  return undefined;
}

/** The folder of cgroup `own` under a mount whose root is `mount.root`, or undefined when outside it. */
function cgroupDir(mount: Mount, own: string): string | undefined {
  const root = mount.root === '/' ? '' : mount.root;
  if (root !== '' && own !== root && !own.startsWith(`${root}/`)) return undefined;
  return path.join(mount.mountPoint, own.slice(root.length));
}

/** Kills every process listed in `procsFile` until none is left (bounded), then removes `dir`. */
async function killAndRemove(dir: string, killFile: string | undefined): Promise<void> {
  const procsFile = path.join(dir, 'cgroup.procs');
  const deadline = Date.now() + 2_000;
  for (;;) {
    let pids: number[];
    try {
      pids = (await readFile(procsFile, 'utf8')).split('\n').filter(Boolean).map(Number);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // already removed
      throw err;
    }
    if (pids.length === 0) break;
    const killedAll = killFile
      ? await writeFile(killFile, '1').then(
          () => true,
          () => false,
        )
      : false;
    // cgroup.kill needs Linux 5.14; before that (and in v1) each process is killed.
    if (!killedAll) for (const pid of pids) killQuietly(pid);
    if (Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  try {
    await rmdir(dir);
  } catch (err) {
    // EBUSY: a process still exiting; the empty cgroup is removed the next time stale ones are swept.
    if ((err as NodeJS.ErrnoException).code !== 'EBUSY' && (err as NodeJS.ErrnoException).code !== 'ENOENT')
      throw err;
  }
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch (err) {
    // ESRCH: it ended between the listing and the kill.
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/**
 * Removes per-command cgroups (named `<magpie's pid>-<random hex>`) whose magpie is
 * gone (a crash); those of running magpies, this one included, stay.
 */
async function sweep(parent: string): Promise<void> {
  const entries = await readdir(parent, { withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isDirectory() || !/^\d+-[0-9a-f]+$/.test(entry.name)) continue;
    if (pidExists(Number(entry.name.split('-')[0]))) continue;
    await rmdir(path.join(parent, entry.name)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EBUSY' && err.code !== 'ENOENT') throw err;
    });
  }
}

function makeCgroups(kind: 'v1' | 'v2', parent: string, memory = false): PidsCgroups {
  return {
    kind,
    parent,
    memory,
    async create(maxPids, memoryBytes) {
      const dir = path.join(parent, `${process.pid}-${randomBytes(6).toString('hex')}`);
      await mkdir(dir);
      let closing: Promise<void> | undefined;
      const cgroup: CommandCgroup = {
        procsFile: path.join(dir, 'cgroup.procs'),
        close: () => {
          closing ??= killAndRemove(dir, kind === 'v2' ? path.join(dir, 'cgroup.kill') : undefined);
          return closing;
        },
      };
      try {
        await writeFile(path.join(dir, 'pids.max'), String(maxPids));
        if (memory && memoryBytes !== undefined) {
          await writeFile(path.join(dir, 'memory.max'), String(memoryBytes));
          // No swap either, where the kernel has it (else the limit would only push pages out).
          await writeFile(path.join(dir, 'memory.swap.max'), '0').catch(() => undefined);
        }
      } catch (err) {
        await cgroup.close();
        throw err;
      }
      return cgroup;
    },
  };
}

/** Adds `controller` to a cgroup's subtree_control unless it is there already. */
async function enableController(dir: string, controller: string): Promise<void> {
  const file = path.join(dir, 'cgroup.subtree_control');
  const enabled = (await readFile(file, 'utf8')).trim().split(/\s+/);
  if (!enabled.includes(controller)) await writeFile(file, `+${controller}`);
}

/**
 * Finds a pids cgroup hierarchy magpie may write to and prepares
 * `magpie-exec` in it. Returns the reason when there is none (no pids
 * controller, a read-only cgroup file system, not root…).
 */
export async function openPidsCgroups(): Promise<PidsCgroups | { unavailable: string }> {
  let mounts: Mount[];
  let procCgroup: string;
  try {
    [mounts, procCgroup] = await Promise.all([
      readFile('/proc/self/mountinfo', 'utf8').then(parseMountInfo),
      readFile('/proc/self/cgroup', 'utf8'),
    ]);
  } catch (err) {
    return { unavailable: `cannot read /proc (${(err as Error).message})` };
  }
  const failures: string[] = [];
  const v2 = mounts.find((m) => m.fsType === 'cgroup2' && m.root === '/');
  if (v2) {
    try {
      const controllers = (await readFile(path.join(v2.mountPoint, 'cgroup.controllers'), 'utf8')).split(
        /\s+/,
      );
      if (!controllers.includes('pids')) throw new AppError('INTERNAL', 'no pids controller in cgroup v2');
      await enableController(v2.mountPoint, 'pids');
      const parent = path.join(v2.mountPoint, 'magpie-exec');
      await mkdir(parent, { recursive: true });
      await enableController(parent, 'pids');
      // The memory controller too when there is one (memory.max per command); else RLIMIT_AS.
      let memory = false;
      if (controllers.includes('memory')) {
        memory = await enableController(v2.mountPoint, 'memory')
          .then(() => enableController(parent, 'memory'))
          .then(
            () => true,
            () => false,
          );
      }
      await sweep(parent);
      return makeCgroups('v2', parent, memory);
    } catch (err) {
      failures.push(`cgroup v2: ${(err as Error).message}`);
    }
  }
  const v1 = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes('pids'));
  const own = ownCgroup(procCgroup, 'pids');
  if (v1 && own !== undefined) {
    const dir = cgroupDir(v1, own);
    try {
      if (!dir) throw new AppError('INTERNAL', `magpie's cgroup ${own} is outside the mounted hierarchy`);
      const parent = path.join(dir, 'magpie-exec');
      await mkdir(parent, { recursive: true });
      await sweep(parent);
      return makeCgroups('v1', parent);
    } catch (err) {
      failures.push(`cgroup v1 pids: ${(err as Error).message}`);
    }
  }
  if (failures.length === 0) failures.push('no pids cgroup mounted');
  return { unavailable: failures.join('; ') };
}

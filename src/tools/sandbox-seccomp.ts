/**
 * The seccomp filter every sandboxed command runs under (bwrap's `--seccomp`
 * loads it just before the command starts): the system calls a shell command
 * has no business making fail with EPERM — mounting, kernel modules, kexec,
 * keyrings, bpf, perf events, userfaultfd, swap, reboot, clocks, quotas,
 * ptrace and cross-process memory access, new namespaces (unshare, setns,
 * clone with a CLONE_NEW* flag) and terminal input injection (TIOCSTI,
 * TIOCLINUX). `clone3` answers ENOSYS, so C libraries fall back to `clone`,
 * whose flags a filter can read. A system call of another architecture
 * (32-bit `int 0x80` on x86-64) kills the process; x32 calls answer ENOSYS.
 *
 * The filter is a classic BPF program, built here because Node has no
 * binding to libseccomp (and no FFI to call it); it is a fixed-shape deny list
 * (arch check, then one comparison per call), and the sandbox tests check its
 * effect in a real bwrap sandbox.
 */

/** Architectures with a filter: Node's `process.arch` → audit arch and system call numbers. */
interface ArchTable {
  audit: number;
  /** x86-64 only: numbers with this bit are x32 calls. */
  x32Bit?: number;
  calls: Record<DeniedCall | 'clone' | 'clone3' | 'ioctl', number>;
}

/** Every call the filter refuses with EPERM (besides clone with namespace flags and two ioctls). */
const DENIED = [
  'mount',
  'umount2',
  'pivot_root',
  'move_mount',
  'open_tree',
  'fsopen',
  'fsconfig',
  'fsmount',
  'fspick',
  'mount_setattr',
  'ptrace',
  'process_vm_readv',
  'process_vm_writev',
  'kexec_load',
  'kexec_file_load',
  'init_module',
  'finit_module',
  'delete_module',
  'keyctl',
  'add_key',
  'request_key',
  'bpf',
  'perf_event_open',
  'userfaultfd',
  'swapon',
  'swapoff',
  'reboot',
  'acct',
  'settimeofday',
  'clock_settime',
  'clock_adjtime',
  'adjtimex',
  'quotactl',
  'quotactl_fd',
  'unshare',
  'setns',
  'syslog',
  'lookup_dcookie',
  'name_to_handle_at',
  'open_by_handle_at',
  'nfsservctl',
  'vhangup',
  'sethostname',
  'setdomainname',
] as const;
type DeniedCall = (typeof DENIED)[number];

/** From <asm/unistd_64.h> (x86-64) and <asm-generic/unistd.h> (arm64). */
const ARCHES: Record<string, ArchTable> = {
  x64: {
    audit: 0xc000003e,
    x32Bit: 0x40000000,
    calls: {
      mount: 165,
      umount2: 166,
      pivot_root: 155,
      move_mount: 429,
      open_tree: 428,
      fsopen: 430,
      fsconfig: 431,
      fsmount: 432,
      fspick: 433,
      mount_setattr: 442,
      ptrace: 101,
      process_vm_readv: 310,
      process_vm_writev: 311,
      kexec_load: 246,
      kexec_file_load: 320,
      init_module: 175,
      finit_module: 313,
      delete_module: 176,
      keyctl: 250,
      add_key: 248,
      request_key: 249,
      bpf: 321,
      perf_event_open: 298,
      userfaultfd: 323,
      swapon: 167,
      swapoff: 168,
      reboot: 169,
      acct: 163,
      settimeofday: 164,
      clock_settime: 227,
      clock_adjtime: 305,
      adjtimex: 159,
      quotactl: 179,
      quotactl_fd: 443,
      unshare: 272,
      setns: 308,
      syslog: 103,
      lookup_dcookie: 212,
      name_to_handle_at: 303,
      open_by_handle_at: 304,
      nfsservctl: 180,
      vhangup: 153,
      sethostname: 170,
      setdomainname: 171,
      clone: 56,
      clone3: 435,
      ioctl: 16,
    },
  },
  arm64: {
    audit: 0xc00000b7,
    calls: {
      mount: 40,
      umount2: 39,
      pivot_root: 41,
      move_mount: 429,
      open_tree: 428,
      fsopen: 430,
      fsconfig: 431,
      fsmount: 432,
      fspick: 433,
      mount_setattr: 442,
      ptrace: 117,
      process_vm_readv: 270,
      process_vm_writev: 271,
      kexec_load: 104,
      kexec_file_load: 294,
      init_module: 105,
      finit_module: 273,
      delete_module: 106,
      keyctl: 219,
      add_key: 217,
      request_key: 218,
      bpf: 280,
      perf_event_open: 241,
      userfaultfd: 282,
      swapon: 224,
      swapoff: 225,
      reboot: 142,
      acct: 89,
      settimeofday: 170,
      clock_settime: 112,
      clock_adjtime: 266,
      adjtimex: 171,
      quotactl: 60,
      quotactl_fd: 443,
      unshare: 97,
      setns: 268,
      syslog: 116,
      lookup_dcookie: 18,
      name_to_handle_at: 264,
      open_by_handle_at: 265,
      nfsservctl: 42,
      vhangup: 58,
      sethostname: 161,
      setdomainname: 162,
      clone: 220,
      clone3: 435,
      ioctl: 29,
    },
  },
};

/** CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET and NEWTIME. */
const CLONE_NAMESPACES =
  0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x80;
/** Terminal ioctls that push input into a terminal or its console: TIOCSTI and TIOCLINUX. */
const TERMINAL_INJECTION = [0x5412, 0x541c];

// Classic BPF opcodes and seccomp return values (<linux/filter.h>, <linux/seccomp.h>).
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const retErrno = (errno: number) => 0x00050000 | errno;
const EPERM = 1;
const ENOSYS = 38;
/** Offsets in struct seccomp_data: nr, arch, then args[] (the low 32 bits first, little-endian). */
const NR = 0;
const ARCH = 4;
const argLow = (index: number) => 16 + 8 * index;

type Instruction = [code: number, jt: number, jf: number, k: number];

/** The names of the calls refused with EPERM, for docs and doctor. */
export const DENIED_CALLS: readonly string[] = DENIED;

/** True when this machine's architecture has a filter. */
export function seccompSupported(arch: string = process.arch): boolean {
  return arch in ARCHES;
}

/**
 * The filter for `arch` as bytes of `struct sock_filter` (what bwrap's
 * `--seccomp FD` reads), or undefined on an architecture without a table.
 *
 * @example
 * const filter = seccompFilter(); // pass on fd 3 with bwrap --seccomp 3
 */
export function seccompFilter(arch: string = process.arch): Buffer | undefined {
  const table = ARCHES[arch];
  if (!table) return undefined;
  const { calls } = table;
  const program: Instruction[] = [
    [LD_W_ABS, 0, 0, ARCH],
    [JEQ_K, 1, 0, table.audit],
    [RET_K, 0, 0, RET_KILL_PROCESS],
    [LD_W_ABS, 0, 0, NR],
  ];
  if (table.x32Bit !== undefined) {
    program.push([JGE_K, 0, 1, table.x32Bit], [RET_K, 0, 0, retErrno(ENOSYS)]);
  }
  for (const name of DENIED) program.push([JEQ_K, 0, 1, calls[name]], [RET_K, 0, 0, retErrno(EPERM)]);
  program.push([JEQ_K, 0, 1, calls.clone3], [RET_K, 0, 0, retErrno(ENOSYS)]);
  // clone with any namespace flag in its first argument; then the call number again.
  program.push(
    [JEQ_K, 0, 3, calls.clone],
    [LD_W_ABS, 0, 0, argLow(0)],
    [JSET_K, 0, 1, CLONE_NAMESPACES],
    [RET_K, 0, 0, retErrno(EPERM)],
    [LD_W_ABS, 0, 0, NR],
  );
  // ioctl(fd, TIOCSTI | TIOCLINUX, …): each comparison jumps to the EPERM when equal; then the call number again.
  const n = TERMINAL_INJECTION.length;
  program.push([JEQ_K, 0, n + 2, calls.ioctl], [LD_W_ABS, 0, 0, argLow(1)]);
  TERMINAL_INJECTION.forEach((request, i) => {
    program.push([JEQ_K, n - 1 - i, i === n - 1 ? 1 : 0, request]);
  });
  program.push([RET_K, 0, 0, retErrno(EPERM)], [LD_W_ABS, 0, 0, NR]);
  program.push([RET_K, 0, 0, RET_ALLOW]);
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    bytes.writeUInt16LE(code, i * 8);
    bytes.writeUInt8(jt, i * 8 + 2);
    bytes.writeUInt8(jf, i * 8 + 3);
    bytes.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return bytes;
}

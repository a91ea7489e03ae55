/**
 * The seccomp filter in a real bubblewrap sandbox: keyrings, new namespaces,
 * clone3 and terminal injection are refused with the filter's errno, while
 * ordinary commands (pipes, background jobs, perl) still run.
 */
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BwrapSandbox } from '../../../src/tools/sandbox.js';
import { bwrapSandbox, runSandboxed } from './sandboxed-exec.js';

/** perl's syscall() with `args`, printing "<return value> <errno>". */
const perlCall = (nr: number, ...args: number[]) =>
  `perl -e '$r = syscall(${[nr, ...args].join(', ')}); print "$r ", $!+0, "\\n"'`;

describe('exec in a bubblewrap sandbox: the seccomp filter', () => {
  let root: string;
  let ws: string;
  let sandbox: BwrapSandbox;

  beforeAll(async () => {
    root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'magpie-seccomp-')));
    ws = path.join(root, 'workspace');
    await mkdir(ws, { recursive: true });
    sandbox = await bwrapSandbox(ws);
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  const exec = (command: string) => runSandboxed(ws, sandbox, command);

  it('is on, and says so', () => {
    expect(process.arch).toBe('x64');
    expect(sandbox.describe()).toMatch(/seccomp filter \(\d+ system calls and new namespaces refused\)/);
  });

  it('refuses keyctl with EPERM (the host answers it with a keyring id)', async () => {
    // keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0): works for anyone without the filter.
    const result = await exec(perlCall(250, 0, -3, 0));
    expect(result.forLLM).toMatch(/^-1 1\n/);
  });

  it('refuses new namespaces: unshare, and clone with CLONE_NEWUSER', async () => {
    const result = await exec(
      `unshare --user --map-root-user id -u; echo "unshare exit $?"; ${perlCall(272, 0x10000000)}; ${perlCall(56, 0x10000000 | 17, 0, 0, 0, 0)}`,
    );
    expect(result.forLLM).toMatch(/unshare exit [1-9]/);
    expect(result.forLLM).toMatch(/Operation not permitted/);
    const lines = result.forLLM.split('\n').filter((l) => /^-?\d+ \d+$/.test(l));
    // unshare(CLONE_NEWUSER) and clone(CLONE_NEWUSER | SIGCHLD): both EPERM.
    expect(lines).toEqual(['-1 1', '-1 1']);
  });

  it('answers clone3 with ENOSYS, so C libraries fall back to clone (threads and forks still work)', async () => {
    const result = await exec(
      `${perlCall(435, 0, 0)}; (echo child) & wait; perl -e 'my $p = fork; if ($p == 0) { exit 7 } waitpid($p, 0); print "forked ", $? >> 8, "\\n"'`,
    );
    expect(result.forLLM).toMatch(/^-1 38\n/);
    expect(result.forLLM).toContain('child');
    expect(result.forLLM).toContain('forked 7');
  });

  it('refuses ptrace and the TIOCSTI ioctl', async () => {
    // ptrace(PTRACE_TRACEME) is allowed to anyone without the filter; ioctl(0, TIOCSTI, …) fails otherwise with ENOTTY.
    const result = await exec(`${perlCall(101, 0, 0, 0, 0)}; ${perlCall(16, 1, 0x5412, 0)}`);
    const lines = result.forLLM.split('\n').filter((l) => /^-?\d+ \d+$/.test(l));
    expect(lines).toEqual(['-1 1', '-1 1']);
  });

  it('leaves ordinary commands alone', async () => {
    const result = await exec('printf "b\\na\\n" | sort | tr a-z A-Z; date +%Y >/dev/null && echo dated');
    expect(result.isError).toBeFalsy();
    expect(result.forLLM).toMatch(/^A\nB\ndated\n/);
  });
});

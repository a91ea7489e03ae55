import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type BwrapArgsInput,
  bwrapArgs,
  readHostLayout,
  SANDBOX_PATH,
  sandboxEnv,
} from '../../../src/tools/sandbox-args.js';
import { tempDirPerTest } from '../../fakes/workspace.js';

describe('the /etc the sandbox shows', () => {
  let etc: string;
  tempDirPerTest(async (made) => {
    etc = made;
    for (const dir of ['ssl/certs', 'ssl/private', 'ssh', 'python3.11', 'sudoers.d', 'pki/tls/private']) {
      await mkdir(path.join(etc, dir), { recursive: true });
    }
    for (const file of [
      'passwd',
      'group',
      'hosts',
      'shadow',
      'gshadow',
      'shadow-',
      'sudoers',
      'npmrc',
      'pip.conf',
      'gitconfig',
      'machine-id',
      'ssl/private/server.key',
      'ssl/certs/ca.pem',
      'ssh/ssh_config',
      'ssh/ssh_host_ed25519_key',
      'pki/tls/private/key.pem',
    ]) {
      await writeFile(path.join(etc, file), 'x');
    }
    await symlink('/usr/share/zoneinfo/Europe/Lisbon', path.join(etc, 'localtime'));
    await symlink('../run/systemd/resolve/stub-resolv.conf', path.join(etc, 'resolv.conf'));
  }, 'magpie-etc-');

  it('holds what programs need and none of the secrets', async () => {
    const { etc: entries } = await readHostLayout(etc);
    const shown = entries.map((e) => path.relative(etc, e.path));
    expect(shown).toEqual(
      expect.arrayContaining(['passwd', 'group', 'hosts', 'ssl/certs', 'ssh/ssh_config', 'python3.11']),
    );
    for (const secret of [
      'shadow',
      'gshadow',
      'shadow-',
      'sudoers',
      'sudoers.d',
      'npmrc',
      'pip.conf',
      'gitconfig',
      'machine-id',
      'ssl/private',
      'ssl',
      'ssh',
      'pki/tls/private',
    ]) {
      expect(shown).not.toContain(secret);
    }
    for (const e of entries) expect(path.relative(etc, e.path)).not.toMatch(/private|shadow|ssh_host/);
  });

  it('recreates symlinks into /usr and binds (follows) the others', async () => {
    const { etc: entries } = await readHostLayout(etc);
    expect(entries.find((e) => e.path.endsWith('localtime'))).toEqual({
      path: path.join(etc, 'localtime'),
      link: '/usr/share/zoneinfo/Europe/Lisbon',
    });
    expect(entries.find((e) => e.path.endsWith('resolv.conf'))).toEqual({
      path: path.join(etc, 'resolv.conf'),
    });
  });
});

describe('bwrapArgs', () => {
  const input: BwrapArgsInput = {
    layout: { system: [{ path: '/bin', link: 'usr/bin' }], etc: [{ path: '/etc/passwd' }] },
    workspace: '/srv/ws',
    network: false,
    readOnly: ['/srv/ws/sessions'],
    masked: [
      { path: '/srv/ws/.redis', directory: true },
      { path: '/srv/ws/.env', directory: false },
    ],
    env: sandboxEnv({ home: '/srv/ws', lang: 'en_GB.UTF-8', timezone: 'Europe/Lisbon' }),
    tmpBytes: 1024,
    features: { disableUserns: true, tmpfsSize: true },
    command: ['/usr/bin/prlimit', '--nproc=256', '--', '/bin/sh', '-c', 'ls'],
  };
  const expectOrder = (args: string[], first: string[], second: string[]) => {
    const at = (seq: string[]) => args.findIndex((_, i) => seq.every((s, j) => args[i + j] === s));
    expect(at(first)).toBeGreaterThanOrEqual(0);
    expect(at(second)).toBeGreaterThan(at(first));
  };

  it('isolates every namespace, drops capabilities and starts from an empty environment', () => {
    const args = bwrapArgs(input);
    for (const flag of [
      '--unshare-user',
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--unshare-cgroup-try',
      '--unshare-net',
      '--disable-userns',
      '--die-with-parent',
      '--new-session',
      '--clearenv',
    ]) {
      expect(args).toContain(flag);
    }
    expectOrder(args, ['--cap-drop', 'ALL'], ['--ro-bind', '/usr', '/usr']);
    expect(args.slice(args.indexOf('--clearenv'))).toEqual([
      '--clearenv',
      '--setenv',
      'PATH',
      SANDBOX_PATH,
      '--setenv',
      'HOME',
      '/srv/ws',
      '--setenv',
      'LANG',
      'en_GB.UTF-8',
      '--setenv',
      'TZ',
      'Europe/Lisbon',
      '--setenv',
      'TERM',
      'dumb',
      '--',
      ...input.command,
    ]);
  });

  it('shares the network only when asked', () => {
    expect(bwrapArgs({ ...input, network: true })).not.toContain('--unshare-net');
  });

  it('mounts in an order where later mounts cover earlier ones', () => {
    const args = bwrapArgs(input);
    expectOrder(args, ['--symlink', 'usr/bin', '/bin'], ['--ro-bind-try', '/etc/passwd', '/etc/passwd']);
    expectOrder(args, ['--size', '1024', '--tmpfs', '/tmp'], ['--bind', '/srv/ws', '/srv/ws']);
    expectOrder(
      args,
      ['--bind', '/srv/ws', '/srv/ws'],
      ['--ro-bind', '/srv/ws/sessions', '/srv/ws/sessions'],
    );
    expectOrder(
      args,
      ['--bind', '/srv/ws', '/srv/ws'],
      ['--tmpfs', '/srv/ws/.redis', '--remount-ro', '/srv/ws/.redis'],
    );
    expectOrder(args, ['--bind', '/srv/ws', '/srv/ws'], ['--ro-bind', '/dev/null', '/srv/ws/.env']);
    expectOrder(
      args,
      ['--ro-bind', '/dev/null', '/srv/ws/.env'],
      ['--remount-ro', '/', '--chdir', '/srv/ws'],
    );
    expect(args).not.toContain('/root');
    expect(args).not.toContain('/home');
  });

  it('binds the workspace read-only in read-only mode, sessions/ and the masks still over it', () => {
    const args = bwrapArgs({ ...input, workspaceReadOnly: true });
    expect(args.join(' ')).not.toContain('--bind /srv/ws /srv/ws');
    expectOrder(
      args,
      ['--ro-bind', '/srv/ws', '/srv/ws'],
      ['--ro-bind', '/srv/ws/sessions', '/srv/ws/sessions'],
    );
    expectOrder(args, ['--ro-bind', '/srv/ws', '/srv/ws'], ['--tmpfs', '/srv/ws/.redis']);
  });

  it('binds each writable root read-write at its own path, after the system and the workspace', () => {
    const args = bwrapArgs({ ...input, writableRoots: ['/srv/shared', '/data/out'] });
    expectOrder(args, ['--ro-bind', '/usr', '/usr'], ['--bind', '/srv/shared', '/srv/shared']);
    expectOrder(
      args,
      ['--ro-bind-try', '/etc/passwd', '/etc/passwd'],
      ['--bind', '/srv/shared', '/srv/shared'],
    );
    expectOrder(args, ['--tmpfs', '/tmp'], ['--bind', '/data/out', '/data/out']);
    expectOrder(args, ['--ro-bind', '/dev/null', '/srv/ws/.env'], ['--bind', '/srv/shared', '/srv/shared']);
    expectOrder(args, ['--bind', '/data/out', '/data/out'], ['--remount-ro', '/']);
    expect(bwrapArgs({ ...input, writableRoots: ['/srv/shared'], workspaceReadOnly: true })).toContain(
      '/srv/shared',
    );
  });

  it('as root, makes the folders above the workspace and every writable root readable (0755), parents first', () => {
    const args = bwrapArgs({ ...input, asRoot: true, writableRoots: ['/data/out/here', '/srv/shared'] });
    const made = args.flatMap((a, i) => (a === '--dir' && args[i - 2] === '--perms' ? [args[i + 1]] : []));
    const above = made.filter((dir) => !dir?.startsWith('/etc'));
    expect(above).toEqual(['/data', '/data/out', '/srv']);
    expectOrder(
      args,
      ['--perms', '0755', '--dir', '/data/out'],
      ['--bind', '/data/out/here', '/data/out/here'],
    );
  });

  it('leaves out options an older bwrap lacks', () => {
    const args = bwrapArgs({ ...input, features: { disableUserns: false, tmpfsSize: false } });
    expect(args).not.toContain('--disable-userns');
    expect(args).not.toContain('--size');
  });

  it('keeps LANG and TZ to plain values', () => {
    expect(sandboxEnv({ home: '/w', lang: 'x; rm -rf /', timezone: '$(id)' })).toMatchObject({
      LANG: 'C.UTF-8',
      TZ: 'UTC',
    });
  });
});

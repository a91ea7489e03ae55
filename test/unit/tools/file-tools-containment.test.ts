/**
 * What the file tools refuse, tried as an attacker would: hardlinks to an
 * outside file, FIFOs and sockets, /proc paths, `..`, absolute paths, NUL
 * bytes, symlinks that point out, dangling or loop — and, as positive
 * controls, that ordinary work and symlinks that stay inside still work, in
 * both confinements (Linux descriptor-relative and the portable fallback).
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { link, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../../../src/tools/registry.js';
import type { Confinement } from '../../../src/workspace/workspace-walk.js';
import { workspaceBesideOutsidePerTest } from '../../fakes/workspace.js';
import { fileToolRegistry, toolContext } from './helpers.js';

const SECRET = 'TOP-SECRET-outside';

describe.each(['proc', 'portable'] as const)('file tools, %s confinement', (confinement: Confinement) => {
  let ws: string;
  let outside: string;
  let registry: ToolRegistry;
  const fifos: string[] = [];
  const call = (name: string, args: Record<string, unknown>) =>
    registry.execute(name, JSON.stringify(args), toolContext(ws));
  const expectOutsideIntact = async (): Promise<void> => {
    expect((await readdir(outside)).sort()).toEqual(['secret.txt']);
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
  };

  workspaceBesideOutsidePerTest(async (dirs) => {
    ({ ws, outside } = dirs);
    await mkdir(path.join(ws, 'notes'), { recursive: true });
    await writeFile(path.join(outside, 'secret.txt'), SECRET);
    await writeFile(path.join(ws, 'notes', 'a.md'), 'alpha\n');
    registry = fileToolRegistry(ws, confinement);
  });
  afterEach(async () => {
    // A regression would leave a thread blocked opening a FIFO: a writer end releases it.
    for (const fifo of fifos.splice(0)) closeSync(openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK));
  });

  const mkfifo = (name: string): string => {
    const fifo = path.join(ws, name);
    execFileSync('mkfifo', [fifo]);
    fifos.push(fifo);
    return fifo;
  };

  describe('refusals', () => {
    it.each([
      ['read_file', { path: 'hl.txt' }],
      ['append_file', { path: 'hl.txt', content: 'pwned' }],
      ['write_file', { path: 'hl.txt', content: 'pwned' }],
      ['edit_file', { path: 'hl.txt', old_text: 'TOP', new_text: 'pwned' }],
    ])('%s refuses a hardlink to an outside file', async (name, args) => {
      await link(path.join(outside, 'secret.txt'), path.join(ws, 'hl.txt'));
      const result = await call(name, args);
      expect(result).toEqual({
        forLLM:
          'Error: hl.txt has 2 hard links; the file tools refuse hard-linked files (another name may lie outside the workspace)',
        isError: true,
      });
      await expectOutsideIntact();
    });

    it('read_file refuses FIFOs at once, and four of them do not stall a normal read', async () => {
      for (const i of [1, 2, 3, 4]) mkfifo(`pipe${i}`);
      const started = performance.now();
      const results = await Promise.all([
        ...[1, 2, 3, 4].map((i) => call('read_file', { path: `pipe${i}` })),
        call('read_file', { path: 'notes/a.md' }),
      ]);
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(results.slice(0, 4).map((r) => r.forLLM)).toEqual(
        [1, 2, 3, 4].map(
          (i) => `Error: pipe${i} is a named pipe (FIFO); the file tools open only regular files and folders`,
        ),
      );
      expect(results[4]).toEqual({ forLLM: 'alpha' });
    });

    it.each([
      ['write_file', { path: 'p', content: 'x' }],
      ['append_file', { path: 'p', content: 'x' }],
      ['edit_file', { path: 'p', old_text: 'a', new_text: 'b' }],
    ])('%s refuses a FIFO without blocking', async (name, args) => {
      mkfifo('p');
      expect((await call(name, args)).forLLM).toBe(
        'Error: p is a named pipe (FIFO); the file tools open only regular files and folders',
      );
    });

    it('read_file refuses a socket', async () => {
      const server: Server = createServer();
      await new Promise<void>((resolve) => server.listen(path.join(ws, 'sock'), resolve));
      try {
        expect((await call('read_file', { path: 'sock' })).forLLM).toBe(
          'Error: sock is a socket; the file tools open only regular files and folders',
        );
      } finally {
        await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
      }
    });

    it.each([
      '/proc/self/environ',
      '/proc/self/fd/0',
      '/proc/self/root/etc/passwd',
      '/proc/self/cwd/package.json',
      '/dev/zero',
      '/etc/passwd',
      '../outside/secret.txt',
      'notes/../../outside/secret.txt',
      '..',
    ])('read_file refuses %s as outside the workspace', async (requested) => {
      const result = await call('read_file', { path: requested });
      expect(result.forLLM).toBe(
        `Error: path "${requested}" is outside the workspace; use a path inside the workspace (relative paths are resolved from it)`,
      );
    });

    it('refuses absolute paths outside, including a sibling that shares the prefix', async () => {
      for (const requested of [
        path.join(outside, 'secret.txt'),
        `${ws}-sibling/x`,
        `${ws}/../outside/secret.txt`,
      ]) {
        expect((await call('read_file', { path: requested })).forLLM).toContain('is outside the workspace');
        expect((await call('write_file', { path: requested, content: 'x' })).forLLM).toContain(
          'is outside the workspace',
        );
      }
      await expectOutsideIntact();
    });

    it('refuses a NUL byte in a path', async () => {
      for (const name of ['read_file', 'write_file', 'append_file', 'list_dir']) {
        const result = await call(name, { path: 'notes/a.md\u0000../../outside/secret.txt', content: 'x' });
        expect(result).toEqual({ forLLM: 'Error: path contains a NUL byte', isError: true });
      }
      await expectOutsideIntact();
    });

    it.each([
      ['an absolute symlink to an outside file', 'link', () => path.join(outside, 'secret.txt')],
      ['a relative symlink climbing out', 'link', () => '../outside/secret.txt'],
      ['a symlink to /proc/self/environ', 'link', () => '/proc/self/environ'],
      ['a symlink to an outside folder', 'dir/secret.txt', () => outside],
    ])('every tool refuses %s', async (_, requested, target) => {
      await symlink(target(), path.join(ws, requested.split('/')[0] as string));
      for (const [name, args] of [
        ['read_file', { path: requested }],
        ['write_file', { path: requested, content: 'pwned' }],
        ['edit_file', { path: requested, old_text: 'TOP', new_text: 'pwned' }],
        ['append_file', { path: requested, content: 'pwned' }],
      ] as const) {
        const result = await call(name, args);
        expect(result.forLLM).toContain('is outside the workspace');
        expect(result.forLLM).not.toContain(SECRET);
      }
      await expectOutsideIntact();
    });

    it('a chain of symlinks that ends outside is refused; one that loops is refused', async () => {
      await symlink('b', path.join(ws, 'a'));
      await symlink('notes/../c', path.join(ws, 'b'));
      await symlink('../outside', path.join(ws, 'c'));
      expect((await call('read_file', { path: 'a/secret.txt' })).forLLM).toContain(
        'is outside the workspace',
      );
      await symlink('loop2', path.join(ws, 'loop1'));
      await symlink('loop1', path.join(ws, 'loop2'));
      const looped = await call('write_file', { path: 'loop1', content: 'x' });
      expect(looped.isError).toBe(true);
      expect(looped.forLLM).toMatch(/symbolic link/);
      await expectOutsideIntact();
    });

    it('a dangling symlink pointing out creates nothing outside', async () => {
      await symlink(path.join(outside, 'planted.txt'), path.join(ws, 'dangling'));
      for (const name of ['write_file', 'append_file']) {
        expect((await call(name, { path: 'dangling', content: 'x' })).isError).toBe(true);
      }
      expect((await call('read_file', { path: 'dangling' })).isError).toBe(true);
      await expectOutsideIntact();
    });

    it('list_dir refuses a folder symlink pointing out and lists such a link as a plain entry', async () => {
      await symlink(outside, path.join(ws, 'out'));
      expect((await call('list_dir', { path: 'out' })).forLLM).toContain('is outside the workspace');
      expect((await call('list_dir', { path: '.' })).forLLM).toBe('notes/\nout');
    });

    it('write_file refuses the workspace itself', async () => {
      expect((await call('write_file', { path: '.', content: 'x' })).forLLM).toBe(
        'Error: path "." is the workspace directory itself; name a file',
      );
    });
  });

  describe('positive controls', () => {
    it('read, write, edit, append and list inside the workspace', async () => {
      expect(await call('write_file', { path: 'new/deep/b.md', content: 'one\n' })).toEqual({
        forLLM: 'wrote 4 bytes to new/deep/b.md',
      });
      expect(await call('append_file', { path: 'new/deep/b.md', content: 'two\n' })).toEqual({
        forLLM: 'appended 4 bytes to new/deep/b.md',
      });
      expect(await call('edit_file', { path: 'new/deep/b.md', old_text: 'two', new_text: 'TWO' })).toEqual({
        forLLM: 'edited new/deep/b.md',
      });
      expect(await call('read_file', { path: 'new/deep/b.md' })).toEqual({ forLLM: 'one\nTWO' });
      expect(await call('read_file', { path: path.join(ws, 'notes', 'a.md') })).toEqual({ forLLM: 'alpha' });
      expect(await call('list_dir', { path: 'new' })).toEqual({ forLLM: 'deep/' });
      expect(await readdir(path.join(ws, 'new', 'deep'))).toEqual(['b.md']); // no temp file left
    });

    it('a symlink to a file inside works for every tool and stays a symlink', async () => {
      await symlink('notes/a.md', path.join(ws, 'shortcut.md'));
      expect(await call('read_file', { path: 'shortcut.md' })).toEqual({ forLLM: 'alpha' });
      await call('append_file', { path: 'shortcut.md', content: 'beta\n' });
      await call('edit_file', { path: 'shortcut.md', old_text: 'beta', new_text: 'gamma' });
      expect(await readFile(path.join(ws, 'notes', 'a.md'), 'utf8')).toBe('alpha\ngamma\n');
      await call('write_file', { path: 'shortcut.md', content: 'replaced\n' });
      expect(await readFile(path.join(ws, 'notes', 'a.md'), 'utf8')).toBe('replaced\n');
      expect((await call('list_dir', {})).forLLM).toBe('notes/\nshortcut.md');
    });

    it('a symlinked folder inside works, absolute or relative', async () => {
      await symlink(path.join(ws, 'notes'), path.join(ws, 'abs'));
      await symlink('notes', path.join(ws, 'rel'));
      expect(await call('read_file', { path: 'abs/a.md' })).toEqual({ forLLM: 'alpha' });
      expect((await call('write_file', { path: 'rel/c.md', content: 'c' })).isError).toBeUndefined();
      expect(await readFile(path.join(ws, 'notes', 'c.md'), 'utf8')).toBe('c');
      expect((await call('list_dir', { path: 'rel' })).forLLM).toBe('a.md\nc.md');
    });
  });
});

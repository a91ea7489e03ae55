import { chmod, mkdir, open, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { createAppendFileTool } from '../../../src/tools/append-file.js';
import { createEditFileTool } from '../../../src/tools/edit-file.js';
import { createListDirTool } from '../../../src/tools/list-dir.js';
import { createReadFileTool } from '../../../src/tools/read-file.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { createWriteFileTool } from '../../../src/tools/write-file.js';
import { workspaceBesideOutsidePerTest } from '../../fakes/workspace.js';
import { toolContext } from './helpers.js';

describe('file tools', () => {
  let ws: string;
  let outside: string;
  let registry: ToolRegistry;
  const call = (name: string, args: Record<string, unknown>) =>
    registry.execute(name, JSON.stringify(args), toolContext(ws));

  workspaceBesideOutsidePerTest(async (dirs) => {
    ({ ws, outside } = dirs);
    await writeFile(path.join(outside, 'secret.txt'), 'top secret');
    registry = new ToolRegistry([
      createReadFileTool(ws, { maxChars: 100, maxFileBytes: 1024 * 1024 }),
      createWriteFileTool(ws),
      createEditFileTool(ws),
      createAppendFileTool(ws),
      createListDirTool(ws, { maxEntries: 3 }),
    ]);
  });

  describe('confinement (every file tool)', () => {
    it.each([
      ['read_file', { path: '../outside/secret.txt' }],
      ['write_file', { path: '../outside/secret.txt', content: 'pwned' }],
      ['edit_file', { path: '../outside/secret.txt', old_text: 'top', new_text: 'pwned' }],
      ['append_file', { path: '/etc/magpie-test-should-not-exist', content: 'x' }],
      ['list_dir', { path: '..' }],
    ])('%s refuses paths outside the workspace', async (name, args) => {
      const result = await call(name, args);
      expect(result.isError).toBe(true);
      expect(result.forLLM).toContain('is outside the workspace');
      expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('top secret');
    });

    it('write_file refuses writing through a symlinked parent dir that points out', async () => {
      await symlink(outside, path.join(ws, 'escape'));
      const result = await call('write_file', { path: 'escape/new.txt', content: 'x' });
      expect(result.forLLM).toContain('is outside the workspace');
      expect(await readdir(outside)).toEqual(['secret.txt']);
    });

    it('read_file refuses a symlink pointing out', async () => {
      await symlink(path.join(outside, 'secret.txt'), path.join(ws, 'link'));
      const result = await call('read_file', { path: 'link' });
      expect(result.forLLM).toContain('is outside the workspace');
      expect(result.forLLM).not.toContain('top secret');
    });
  });

  describe('write_file', () => {
    it('creates parent folders and writes the content', async () => {
      const result = await call('write_file', { path: 'a/b/c.txt', content: 'héllo' });
      expect(result).toEqual({ forLLM: 'wrote 6 bytes to a/b/c.txt' });
      expect(await readFile(path.join(ws, 'a/b/c.txt'), 'utf8')).toBe('héllo');
    });

    it('replaces atomically: no temp file left, permission bits kept', async () => {
      const file = path.join(ws, 'run.sh');
      await writeFile(file, 'old');
      await chmod(file, 0o750);
      await call('write_file', { path: 'run.sh', content: 'new' });
      expect(await readFile(file, 'utf8')).toBe('new');
      expect((await stat(file)).mode & 0o777).toBe(0o750);
      expect(await readdir(ws)).toEqual(['run.sh']);
    });

    it('refuses to replace a directory', async () => {
      await mkdir(path.join(ws, 'dir'));
      const result = await call('write_file', { path: 'dir', content: 'x' });
      expect(result).toEqual({ forLLM: 'Error: dir is a directory, not a file', isError: true });
    });
  });

  describe('edit_file', () => {
    beforeEach(() => writeFile(path.join(ws, 'notes.md'), 'cat: Miso\ndog: Rex\ncat: Miso\nfish: Bob\n'));

    it('replaces text that matches exactly once', async () => {
      const result = await call('edit_file', {
        path: 'notes.md',
        old_text: 'fish: Bob',
        new_text: 'fish: $& Nemo',
      });
      expect(result).toEqual({ forLLM: 'edited notes.md' });
      expect(await readFile(path.join(ws, 'notes.md'), 'utf8')).toBe(
        'cat: Miso\ndog: Rex\ncat: Miso\nfish: $& Nemo\n',
      );
    });

    it('says "not found" when the old text does not occur', async () => {
      const result = await call('edit_file', { path: 'notes.md', old_text: 'bird: Tweety', new_text: 'x' });
      expect(result.isError).toBe(true);
      expect(result.forLLM).toContain('old_text not found in notes.md');
    });

    it('says how many times it matches when ambiguous, and changes nothing', async () => {
      const result = await call('edit_file', {
        path: 'notes.md',
        old_text: 'cat: Miso',
        new_text: 'cat: Tom',
      });
      expect(result.forLLM).toBe(
        'Error: old_text matches 2 times in notes.md, add context so it matches exactly once',
      );
      expect(await readFile(path.join(ws, 'notes.md'), 'utf8')).toContain('cat: Miso\ndog: Rex\ncat: Miso');
    });

    it('reports a missing file', async () => {
      const result = await call('edit_file', { path: 'nope.md', old_text: 'a', new_text: 'b' });
      expect(result).toEqual({ forLLM: 'Error: file not found: nope.md', isError: true });
    });
  });

  describe('append_file', () => {
    it('creates the file and folders, then appends', async () => {
      await call('append_file', { path: 'memory/202611/20261122.md', content: '# 2026-11-22\n' });
      const result = await call('append_file', {
        path: 'memory/202611/20261122.md',
        content: '- fed Miso\n',
      });
      expect(result).toEqual({ forLLM: 'appended 11 bytes to memory/202611/20261122.md' });
      expect(await readFile(path.join(ws, 'memory/202611/20261122.md'), 'utf8')).toBe(
        '# 2026-11-22\n- fed Miso\n',
      );
    });
  });

  describe('list_dir', () => {
    it('lists sorted entries with folders marked "/" and caps the list', async () => {
      await mkdir(path.join(ws, 'b-dir'));
      await mkdir(path.join(ws, 'skills'));
      await writeFile(path.join(ws, 'a.txt'), '');
      await writeFile(path.join(ws, 'c.txt'), '');
      await writeFile(path.join(ws, 'd.txt'), '');
      const result = await call('list_dir', {});
      expect(result.forLLM).toBe('a.txt\nb-dir/\nc.txt\n[… and 2 more entries; showing the first 3]');
    });

    it('lists a sub folder and marks a symlink to a folder as a folder', async () => {
      await mkdir(path.join(ws, 'sub', 'inner'), { recursive: true });
      await symlink(path.join(ws, 'sub', 'inner'), path.join(ws, 'sub', 'link'));
      await writeFile(path.join(ws, 'sub', 'z.txt'), '');
      expect((await call('list_dir', { path: 'sub' })).forLLM).toBe('inner/\nlink/\nz.txt');
    });

    it('says when a folder is empty and when the path is a file', async () => {
      await mkdir(path.join(ws, 'empty'));
      await writeFile(path.join(ws, 'f.txt'), 'x');
      expect((await call('list_dir', { path: 'empty' })).forLLM).toBe('(empty is empty)');
      expect((await call('list_dir', { path: 'f.txt' })).isError).toBe(true);
    });
  });

  describe('read_file', () => {
    it('returns a small text file whole', async () => {
      await writeFile(path.join(ws, 'a.txt'), 'line 1\nline 2\n');
      expect(await call('read_file', { path: 'a.txt' })).toEqual({ forLLM: 'line 1\nline 2' });
    });

    it('caps long output, says it truncated and how to read further', async () => {
      const lines = Array.from({ length: 40 }, (_, i) => `line ${String(i + 1).padStart(2, '0')}`);
      await writeFile(path.join(ws, 'long.txt'), `${lines.join('\n')}\n`);
      const first = await call('read_file', { path: 'long.txt' });
      // 100 chars fit 12 lines of 7 chars plus 11 newlines = 95.
      expect(first.forLLM).toBe(
        `${lines.slice(0, 12).join('\n')}\n[truncated at 100 characters: showed lines 1-12 of 40; call read_file with offset=13 to read further]`,
      );
      const next = await call('read_file', { path: 'long.txt', offset: 13, limit: 2 });
      expect(next.forLLM).toBe('line 13\nline 14\n[showed lines 13-14 of 40; use offset=15 to read further]');
    });

    it('shows the start of a single line longer than the cap', async () => {
      await writeFile(path.join(ws, 'one.txt'), 'x'.repeat(500));
      const result = await call('read_file', { path: 'one.txt' });
      expect(result.forLLM.startsWith('x'.repeat(100))).toBe(true);
      expect(result.forLLM).toContain('line 1 is longer than 100 characters');
    });

    it('refuses binary files', async () => {
      await writeFile(path.join(ws, 'img.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0x02]));
      const result = await call('read_file', { path: 'img.png' });
      expect(result).toEqual({
        forLLM: 'Error: img.png looks like a binary file; read_file only reads text',
        isError: true,
      });
    });

    it('refuses a 50 MB file without reading it', async () => {
      const big = path.join(ws, 'big.log');
      const handle = await open(big, 'w');
      await handle.truncate(50 * 1024 * 1024); // sparse: costs no disk
      await handle.close();
      const tool = createReadFileTool(ws); // default limits
      const result = await new ToolRegistry([tool]).execute(
        'read_file',
        '{"path":"big.log"}',
        toolContext(ws),
      );
      expect(result.isError).toBe(true);
      expect(result.forLLM).toBe(
        'Error: big.log is 50.0 MB, over the 10.0 MB read limit; use exec with head, tail or grep to look at parts of it',
      );
    });

    it('explains a directory and a missing file', async () => {
      await mkdir(path.join(ws, 'dir'));
      expect((await call('read_file', { path: 'dir' })).forLLM).toContain('is a directory; use list_dir');
      expect(await call('read_file', { path: 'missing.md' })).toEqual({
        forLLM: 'Error: file not found: missing.md',
        isError: true,
      });
    });
  });
});

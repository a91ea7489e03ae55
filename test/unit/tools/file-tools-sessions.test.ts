/**
 * sessions/ (and a legacy .redis/) are read-only to the file tools: a turn
 * cannot forge another chat's history, however the path is spelled.
 * Reading and listing them stays allowed.
 */
import { link, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../../../src/tools/registry.js';
import { protectedFolder } from '../../../src/workspace/workspace-path.js';
import type { Confinement } from '../../../src/workspace/workspace-walk.js';
import { tempDirPerTest } from '../../fakes/workspace.js';
import { fileToolRegistry, toolContext } from './helpers.js';

const HISTORY = '{"role":"user","content":"hello"}\n';

describe('protectedFolder', () => {
  it('names the protected top-level folder of a workspace-relative path, whatever its case', () => {
    expect(protectedFolder('sessions')).toBe('sessions');
    expect(protectedFolder('sessions/a.jsonl')).toBe('sessions');
    expect(protectedFolder('SESSIONS/a.jsonl')).toBe('sessions');
    expect(protectedFolder('.redis/dump.rdb')).toBe('.redis');
    expect(protectedFolder('notes/sessions/a.md')).toBeUndefined();
    expect(protectedFolder('sessions-old/a.md')).toBeUndefined();
    expect(protectedFolder('')).toBeUndefined();
  });
});

describe.each(['proc', 'portable'] as const)(
  'sessions/ is read-only to the file tools (%s)',
  (confinement: Confinement) => {
    let ws: string;
    let registry: ToolRegistry;
    const call = (name: string, args: Record<string, unknown>) =>
      registry.execute(name, JSON.stringify(args), toolContext(ws));
    tempDirPerTest(async (dir) => {
      ws = dir;
      await mkdir(path.join(ws, 'sessions'));
      await mkdir(path.join(ws, '.redis'));
      await mkdir(path.join(ws, 'notes'));
      await writeFile(path.join(ws, 'sessions', 'cli_test.jsonl'), HISTORY);
      await writeFile(path.join(ws, '.redis', 'dump.rdb'), 'REDIS');
      registry = fileToolRegistry(ws, confinement);
    });

    const expectUnchanged = async (): Promise<void> => {
      expect(await readdir(path.join(ws, 'sessions'))).toEqual(['cli_test.jsonl']);
      expect(await readFile(path.join(ws, 'sessions', 'cli_test.jsonl'), 'utf8')).toBe(HISTORY);
      expect(await readdir(path.join(ws, '.redis'))).toEqual(['dump.rdb']);
      expect(await readFile(path.join(ws, '.redis', 'dump.rdb'), 'utf8')).toBe('REDIS');
    };

    const changes = (requested: string): [string, Record<string, unknown>][] => [
      ['write_file', { path: requested, content: 'forged' }],
      ['append_file', { path: requested, content: 'forged' }],
      ['edit_file', { path: requested, old_text: 'hello', new_text: 'forged' }],
    ];

    it.each([
      'sessions/cli_test.jsonl',
      'sessions/new.jsonl',
      'sessions/sub/new.jsonl',
      'Sessions/..//sessions/cli_test.jsonl',
      './sessions/../sessions/cli_test.jsonl',
      'notes/../sessions/cli_test.jsonl',
      'SESSIONS/cli_test.jsonl',
      'sessions',
      '.redis/dump.rdb',
      '.redis/new',
    ])('refuses changes to %s with one line', async (requested) => {
      for (const [name, args] of changes(requested)) {
        const result = await call(name, args);
        expect(result.isError).toBe(true);
        expect(result.forLLM).toMatch(
          /^Error: path "[^"\n]*" is in (sessions|\.redis)\/, which the tools may read but not change$/,
        );
      }
      await expectUnchanged();
    });

    it('refuses an absolute path into sessions/', async () => {
      for (const [name, args] of changes(path.join(ws, 'sessions', 'cli_test.jsonl'))) {
        expect((await call(name, args)).forLLM).toContain(
          'is in sessions/, which the tools may read but not change',
        );
      }
      await expectUnchanged();
    });

    it.each([
      ['a relative symlink to the folder', 'alias/cli_test.jsonl', 'sessions', 'alias'],
      ['an absolute symlink to the folder', 'alias/cli_test.jsonl', '<ws>/sessions', 'alias'],
      [
        'a symlink to a history file',
        'notes/history.jsonl',
        '../sessions/cli_test.jsonl',
        'notes/history.jsonl',
      ],
      ['a symlink to the folder, deeper down', 'notes/s/x.jsonl', '../sessions', 'notes/s'],
    ])('refuses changes through %s', async (_, requested, target, linkName) => {
      await symlink(target.replace('<ws>', ws), path.join(ws, linkName));
      for (const [name, args] of changes(requested)) {
        expect((await call(name, args)).forLLM).toContain(
          'is in sessions/, which the tools may read but not change',
        );
      }
      await expectUnchanged();
    });

    it('refuses changes through a hardlink to a history file', async () => {
      await link(path.join(ws, 'sessions', 'cli_test.jsonl'), path.join(ws, 'notes', 'copy.jsonl'));
      for (const [name, args] of changes('notes/copy.jsonl')) {
        expect((await call(name, args)).forLLM).toContain('has 2 hard links');
      }
      expect(await readFile(path.join(ws, 'sessions', 'cli_test.jsonl'), 'utf8')).toBe(HISTORY);
    });

    it('still reads and lists sessions/ and .redis/, and writes beside them', async () => {
      expect(await call('read_file', { path: 'sessions/cli_test.jsonl' })).toEqual({
        forLLM: HISTORY.trim(),
      });
      expect(await call('list_dir', { path: 'sessions' })).toEqual({ forLLM: 'cli_test.jsonl' });
      expect(await call('read_file', { path: '.redis/dump.rdb' })).toEqual({ forLLM: 'REDIS' });
      expect(await call('write_file', { path: 'notes/sessions/a.md', content: 'fine' })).toEqual({
        forLLM: 'wrote 4 bytes to notes/sessions/a.md',
      });
      expect(await call('write_file', { path: 'sessions-archive.md', content: 'fine' })).toEqual({
        forLLM: 'wrote 4 bytes to sessions-archive.md',
      });
      await expectUnchanged();
    });
  },
);

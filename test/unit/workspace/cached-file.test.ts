/**
 * CachedFileReader: the prompt's file reads are confined like the file tools'
 * (a planted symlink, hard link or FIFO reads as absent) and cached by mtime,
 * size and inode.
 */
import { execFileSync } from 'node:child_process';
import { link, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CachedFileReader } from '../../../src/workspace/cached-file.js';

let dir: string;
let workspace: string;
let secret: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'magpie-cached-'));
  workspace = path.join(dir, 'ws');
  await mkdir(workspace);
  secret = path.join(dir, '.env');
  await writeFile(secret, 'OPENAI_API_KEY=sk-outside-secret\n');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('CachedFileReader', () => {
  it('reads a file once and again only after it changed', async () => {
    const reader = new CachedFileReader({ workspace });
    const file = path.join(workspace, 'USER.md');
    await writeFile(file, 'first');
    expect(await reader.read(file)).toBe('first');
    expect(await reader.read(file)).toBe('first');
    expect(reader.reads).toBe(1);
    await writeFile(file, 'second!');
    expect(await reader.read(file)).toBe('second!');
    expect(reader.reads).toBe(2);
  });

  it('reads a symlink to a file inside the workspace', async () => {
    const reader = new CachedFileReader({ workspace });
    await writeFile(path.join(workspace, 'real.md'), 'inside');
    await symlink('real.md', path.join(workspace, 'USER.md'));
    expect(await reader.read(path.join(workspace, 'USER.md'))).toBe('inside');
  });

  it('treats a symlink leading out of the workspace as absent, and says why', async () => {
    const refused: string[] = [];
    const reader = new CachedFileReader({ workspace, onRefused: (file) => refused.push(file) });
    await symlink(secret, path.join(workspace, 'USER.md'));
    expect(await reader.read(path.join(workspace, 'USER.md'))).toBeUndefined();
    expect(refused).toEqual(['USER.md']);
  });

  it('treats a planted symlink as absent after a real file was cached under that name', async () => {
    const reader = new CachedFileReader({ workspace });
    const file = path.join(workspace, 'USER.md');
    await writeFile(file, 'harmless');
    expect(await reader.read(file)).toBe('harmless');
    await rm(file);
    await symlink(secret, file);
    expect(await reader.read(file)).toBeUndefined();
  });

  it('treats a folder symlinked out (memory -> outside) as absent', async () => {
    const reader = new CachedFileReader({ workspace });
    await mkdir(path.join(dir, 'outside'));
    await writeFile(path.join(dir, 'outside', 'MEMORY.md'), 'sk-outside-secret');
    await symlink(path.join(dir, 'outside'), path.join(workspace, 'memory'));
    expect(await reader.read(path.join(workspace, 'memory', 'MEMORY.md'))).toBeUndefined();
  });

  it('treats a hard link to an outside file as absent', async () => {
    const reader = new CachedFileReader({ workspace });
    await link(secret, path.join(workspace, 'USER.md'));
    expect(await reader.read(path.join(workspace, 'USER.md'))).toBeUndefined();
  });

  it('returns at once for a FIFO', async () => {
    const reader = new CachedFileReader({ workspace });
    execFileSync('mkfifo', [path.join(workspace, 'SOUL.md')]);
    expect(await reader.read(path.join(workspace, 'SOUL.md'))).toBeUndefined();
  });

  it('treats a path outside the workspace as absent', async () => {
    const reader = new CachedFileReader({ workspace });
    expect(await reader.read(secret)).toBeUndefined();
  });
});

import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/index.js';
import { resolveInWorkspace } from '../../../src/workspace/workspace-path.js';
import { workspaceBesideOutsidePerTest } from '../../fakes/workspace.js';

describe('resolveInWorkspace', () => {
  let root: string;
  let ws: string;
  let outside: string;

  workspaceBesideOutsidePerTest(async (dirs) => {
    ({ root, ws, outside } = dirs);
    await mkdir(path.join(ws, 'notes'), { recursive: true });
    await writeFile(path.join(outside, 'secret.txt'), 'top secret');
    await writeFile(path.join(ws, 'notes', 'a.md'), 'a');
  });

  const refused = async (requested: string): Promise<AppError> => {
    const err = await resolveInWorkspace(ws, requested).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  };

  it('resolves relative paths, existing or not, inside the workspace', async () => {
    expect(await resolveInWorkspace(ws, 'notes/a.md')).toBe(path.join(ws, 'notes', 'a.md'));
    expect(await resolveInWorkspace(ws, 'new/deep/file.txt')).toBe(path.join(ws, 'new', 'deep', 'file.txt'));
    expect(await resolveInWorkspace(ws, 'notes/../notes/a.md')).toBe(path.join(ws, 'notes', 'a.md'));
    expect(await resolveInWorkspace(ws, '.')).toBe(ws);
  });

  it('accepts an absolute path inside the workspace', async () => {
    expect(await resolveInWorkspace(ws, path.join(ws, 'notes', 'a.md'))).toBe(path.join(ws, 'notes', 'a.md'));
  });

  it('accepts an absolute path spelled through a symlinked workspace path', async () => {
    const alias = path.join(root, 'alias');
    await symlink(ws, alias);
    expect(await resolveInWorkspace(alias, path.join(alias, 'notes', 'a.md'))).toBe(
      path.join(ws, 'notes', 'a.md'),
    );
  });

  it('refuses ../ escapes with a clear one-line message', async () => {
    const err = await refused('../outside/secret.txt');
    expect(err.code).toBe('TOOL_FAILED');
    expect(err.message).toBe(
      'path "../outside/secret.txt" is outside the workspace; use a path inside the workspace (relative paths are resolved from it)',
    );
    await refused('notes/../../outside/x');
  });

  it('refuses absolute paths outside the workspace', async () => {
    await refused('/etc/passwd');
    await refused(path.join(outside, 'secret.txt'));
    await refused(`${ws}-sibling/file`);
  });

  it('refuses a symlinked file pointing out', async () => {
    await symlink(path.join(outside, 'secret.txt'), path.join(ws, 'link.txt'));
    await refused('link.txt');
  });

  it('refuses a new file under a symlinked parent dir pointing out', async () => {
    await symlink(outside, path.join(ws, 'escape'));
    await refused('escape/new-file.txt');
    await refused('escape/secret.txt');
  });

  it('refuses a dangling symlink whose target would be created outside', async () => {
    await symlink(path.join(outside, 'not-yet.txt'), path.join(ws, 'dangling'));
    await refused('dangling');
  });

  it('allows symlinks that stay inside the workspace', async () => {
    await symlink(path.join(ws, 'notes'), path.join(ws, 'shortcut'));
    expect(await resolveInWorkspace(ws, 'shortcut/a.md')).toBe(path.join(ws, 'notes', 'a.md'));
  });

  it('reports a missing workspace with WORKSPACE_MISSING', async () => {
    const err = await resolveInWorkspace(path.join(root, 'nope'), 'a.txt').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('WORKSPACE_MISSING');
  });
});

/**
 * walkInWorkspace holds what it checked: a folder swapped for a symlink
 * after the walk cannot redirect the open, a folder moved out of the
 * workspace is caught by the descriptor check, and the portable fallback
 * notices a file replaced between its check and its open.
 */
import { constants } from 'node:fs';
import { mkdir, open, readFile, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileToolError } from '../../../src/workspace/workspace-path.js';
import { walkInWorkspace } from '../../../src/workspace/workspace-walk.js';
import { workspaceBesideOutsidePerTest } from '../../fakes/workspace.js';

describe('walkInWorkspace', () => {
  let root: string;
  let ws: string;
  let outside: string;

  workspaceBesideOutsidePerTest(async (dirs) => {
    ({ root, ws, outside } = dirs);
    await mkdir(path.join(ws, 'd'), { recursive: true });
    await writeFile(path.join(ws, 'd', 'f.txt'), 'inside');
    await writeFile(path.join(outside, 'f.txt'), 'SECRET');
  });

  const refusal = async (promise: Promise<unknown>): Promise<FileToolError> => {
    const err = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(FileToolError);
    return err as FileToolError;
  };

  it('opens inside the folder it walked, even after that folder is swapped for a symlink pointing out', async () => {
    const walked = await walkInWorkspace(ws, 'd/f.txt', 'proc');
    try {
      await rename(path.join(ws, 'd'), path.join(ws, 'moved'));
      await symlink(outside, path.join(ws, 'd'));
      const handle = await open(walked.entryPath, constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        expect(await handle.readFile('utf8')).toBe('inside');
        expect(await walked.verify(handle)).toBe(path.join(ws, 'moved', 'f.txt'));
      } finally {
        await handle.close();
      }
    } finally {
      await walked.close();
    }
  });

  it('refuses what it opened when the walked folder was moved out of the workspace', async () => {
    const walked = await walkInWorkspace(ws, 'd/f.txt', 'proc');
    try {
      await rename(path.join(ws, 'd'), path.join(outside, 'd'));
      const handle = await open(walked.entryPath, constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        expect((await refusal(walked.verify(handle))).reason).toBe('outside');
      } finally {
        await handle.close();
      }
    } finally {
      await walked.close();
    }
  });

  it('portable: refuses a file replaced between the check and the open', async () => {
    await writeFile(path.join(ws, 'd', 'other.txt'), 'other');
    const walked = await walkInWorkspace(ws, 'd/f.txt', 'portable');
    const handle = await open(walked.entryPath, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      await rename(path.join(ws, 'd', 'other.txt'), path.join(ws, 'd', 'f.txt'));
      expect((await refusal(walked.verify(handle))).reason).toBe('changed');
    } finally {
      await handle.close();
      await walked.close();
    }
  });

  it.each(['proc', 'portable'] as const)(
    '%s: follows a symlink spelled through a symlinked workspace path',
    async (mode) => {
      const alias = path.join(root, 'alias');
      await symlink(ws, alias);
      await symlink(path.join(alias, 'd'), path.join(ws, 'via-alias'));
      const walked = await walkInWorkspace(alias, path.join(alias, 'via-alias', 'f.txt'), mode);
      try {
        expect(walked.name).toBe('f.txt');
        expect(walked.dir.rel).toBe('d');
        expect(await readFile(walked.entryPath, 'utf8')).toBe('inside');
      } finally {
        await walked.close();
      }
    },
  );

  it.each(['proc', 'portable'] as const)(
    '%s: a file in the middle of a path is named as such',
    async (mode) => {
      const err = await refusal(walkInWorkspace(ws, 'd/f.txt/x', mode, { createParents: true }));
      expect(err.reason).toBe('not-directory');
    },
  );

  it('closes every descriptor it held (no leak over many walks)', async () => {
    const before = (await import('node:fs')).readdirSync('/proc/self/fd').length;
    for (let i = 0; i < 200; i++) {
      const walked = await walkInWorkspace(ws, 'd/f.txt', 'proc');
      await walked.close();
      await refusal(walkInWorkspace(ws, '../outside/f.txt', 'proc'));
      await refusal(walkInWorkspace(ws, 'd/f.txt/x', 'proc'));
    }
    expect((await import('node:fs')).readdirSync('/proc/self/fd').length).toBeLessThanOrEqual(before + 2);
  });
});

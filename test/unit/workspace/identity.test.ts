/**
 * The workspace's id (.magpie-id): made once, read back the same, made by
 * exactly one of several processes racing, refused when damaged, and
 * read-only to the file tools however the path is spelled.
 */
import { link, mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runInit } from '../../../src/cli/commands/init.js';
import { AppError } from '../../../src/errors/index.js';
import { createAppendFileTool } from '../../../src/tools/append-file.js';
import { createEditFileTool } from '../../../src/tools/edit-file.js';
import { createReadFileTool } from '../../../src/tools/read-file.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { createWriteFileTool } from '../../../src/tools/write-file.js';
import { ensureWorkspaceId, readWorkspaceId, WORKSPACE_ID_FILE } from '../../../src/workspace/identity.js';
import type { Confinement } from '../../../src/workspace/workspace-walk.js';
import { tempDirPerTest } from '../../fakes/workspace.js';
import { toolContext } from '../tools/helpers.js';

let ws: string;
tempDirPerTest((dir) => {
  ws = dir;
}, 'magpie-identity-');

describe('workspace id', () => {
  it('is made once and read back the same; the file holds only the id', async () => {
    expect(await readWorkspaceId(ws)).toBeUndefined();
    const first = await ensureWorkspaceId(ws);
    expect(first.created).toBe(true);
    expect(first.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await ensureWorkspaceId(ws)).toEqual({ id: first.id, created: false });
    expect(await readWorkspaceId(ws)).toBe(first.id);
    expect(await readFile(path.join(ws, WORKSPACE_ID_FILE), 'utf8')).toBe(`${first.id}\n`);
  });

  it('is made by exactly one of many callers racing, and every caller gets that one', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => ensureWorkspaceId(ws)));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    // No temporary file is left beside it.
    expect((await readdir(ws)).sort()).toEqual([WORKSPACE_ID_FILE]);
  });

  it('refuses a damaged id file with exit code 2 instead of replacing it', async () => {
    await writeFile(path.join(ws, WORKSPACE_ID_FILE), 'not an id\n');
    const err = await ensureWorkspaceId(ws).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).exitCode).toBe(2);
    expect((err as AppError).message).toMatch(/does not hold a workspace id/);
    expect(await readFile(path.join(ws, WORKSPACE_ID_FILE), 'utf8')).toBe('not an id\n');
  });

  it('refuses a missing workspace (exit 2, naming magpie init) rather than creating it', async () => {
    const missing = path.join(ws, 'nowhere');
    const err = await ensureWorkspaceId(missing).catch((e: unknown) => e);
    expect((err as AppError).code).toBe('WORKSPACE_MISSING');
    expect((err as AppError).exitCode).toBe(2);
    expect((err as AppError).message).toContain(`magpie init --workspace ${missing}`);
    expect(await readdir(ws)).toEqual([]);
  });

  it('is made by magpie init, and kept by a second init', async () => {
    const out: string[] = [];
    const io = { out: { write: (t: string) => out.push(t) } };
    await rm(ws, { recursive: true });
    expect(await runInit(['--workspace', ws], io)).toBe(0);
    const id = await readWorkspaceId(ws);
    expect(id).toBeDefined();
    expect(out.join('')).toContain(`created  ${WORKSPACE_ID_FILE} (workspace id ${id})`);
    out.length = 0;
    expect(await runInit(['--workspace', ws], io)).toBe(0);
    expect(await readWorkspaceId(ws)).toBe(id);
    expect(out.join('')).toContain(`kept     ${WORKSPACE_ID_FILE} (workspace id ${id})`);
  });
});

describe.each(['proc', 'portable'] as const)(
  '.magpie-id is read-only to the file tools (%s)',
  (confinement: Confinement) => {
    let registry: ToolRegistry;
    let id: string;
    const call = (name: string, args: Record<string, unknown>) =>
      registry.execute(name, JSON.stringify(args), toolContext(ws));

    beforeEach(async () => {
      ({ id } = await ensureWorkspaceId(ws));
      await mkdir(path.join(ws, 'notes'));
      registry = new ToolRegistry([
        createReadFileTool(ws, { confinement }),
        createWriteFileTool(ws, { confinement }),
        createEditFileTool(ws, { confinement }),
        createAppendFileTool(ws, { confinement }),
      ]);
    });

    const changes = (requested: string): [string, Record<string, unknown>][] => [
      ['write_file', { path: requested, content: 'forged' }],
      ['append_file', { path: requested, content: 'forged' }],
      ['edit_file', { path: requested, old_text: id, new_text: 'forged' }],
    ];

    it.each(['.magpie-id', './.magpie-id', 'notes/../.magpie-id', '.MAGPIE-ID', '<ws>/.magpie-id'])(
      'refuses changes to %s with one line',
      async (requested) => {
        for (const [name, args] of changes(requested.replace('<ws>', ws))) {
          const result = await call(name, args);
          expect(result.isError).toBe(true);
          expect(result.forLLM).toMatch(
            /^Error: path "[^"\n]*" is \.magpie-id, which the tools may read but not change$/,
          );
        }
        expect(await readWorkspaceId(ws)).toBe(id);
      },
    );

    it('refuses changes through a symlink to it', async () => {
      await symlink('../.magpie-id', path.join(ws, 'notes', 'id'));
      for (const [name, args] of changes('notes/id')) {
        expect((await call(name, args)).forLLM).toContain('which the tools may read but not change');
      }
      expect(await readWorkspaceId(ws)).toBe(id);
    });

    it('refuses changes through a hard link to it', async () => {
      await link(path.join(ws, WORKSPACE_ID_FILE), path.join(ws, 'notes', 'id'));
      for (const [name, args] of changes('notes/id')) {
        expect((await call(name, args)).isError).toBe(true);
      }
      expect(await readWorkspaceId(ws)).toBe(id);
    });

    it('still reads it, and writes files beside it', async () => {
      expect(await call('read_file', { path: '.magpie-id' })).toEqual({ forLLM: id });
      expect(
        (await call('write_file', { path: '.magpie-id-notes.md', content: 'fine' })).isError,
      ).toBeUndefined();
    });
  },
);

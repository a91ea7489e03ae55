/**
 * exec in the bubblewrap sandbox cannot change the workspace's id file:
 * writing, removing and renaming `.magpie-id` all fail, reading it works,
 * and the rest of the workspace stays writable.
 */
import { mkdir, mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BwrapSandbox } from '../../../src/tools/sandbox.js';
import { ensureWorkspaceId, WORKSPACE_ID_FILE } from '../../../src/workspace/identity.js';
import { bwrapSandbox, runSandboxed } from './sandboxed-exec.js';

describe('exec in a bubblewrap sandbox: .magpie-id is read-only', () => {
  let root: string;
  let ws: string;
  let id: string;
  let sandbox: BwrapSandbox;

  beforeAll(async () => {
    root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'magpie-sandbox-id-')));
    ws = path.join(root, 'workspace');
    await mkdir(ws);
    ({ id } = await ensureWorkspaceId(ws));
    sandbox = await bwrapSandbox(ws);
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  const exec = (command: string) => runSandboxed(ws, sandbox, command);

  it('refuses writing, removing and renaming it; reads it; writes beside it', async () => {
    const result = await exec(
      'echo forged > .magpie-id; rm -f .magpie-id; mv .magpie-id moved-id; cat .magpie-id; echo ok > beside.txt',
    );
    expect(result.forLLM).toMatch(/\.magpie-id: Read-only file system/);
    expect(result.forLLM).toMatch(
      /cannot remove '\.magpie-id': (Device or resource busy|Read-only file system)/,
    );
    expect(result.forLLM).toMatch(
      /cannot move '\.magpie-id' to 'moved-id': (Device or resource busy|Read-only file system)/,
    );
    expect(result.forLLM).toContain(id);
    expect(await readFile(path.join(ws, WORKSPACE_ID_FILE), 'utf8')).toBe(`${id}\n`);
    expect(await readFile(path.join(ws, 'beside.txt'), 'utf8')).toBe('ok\n');
  });
});

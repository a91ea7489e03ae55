/**
 * In the bubblewrap sandbox, exec cannot change or delete the memory history
 * (`.memory-history/` is bound read-only by default), even by a symlink made
 * made in the same command (to the folder, or to it by `../`): forms the guard
 * alone cannot judge (it refuses the spelled-out and /proc/self/cwd forms first).
 */
import { mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/index.js';
import { MemoryHistory } from '../../../src/memory/history/history.js';
import { createExecTool } from '../../../src/tools/exec.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { resolveSandbox } from '../../../src/tools/sandbox.js';
import { toolContext } from '../../unit/tools/helpers.js';

describe('exec in the sandbox and the memory history', () => {
  let ws: string;
  let history: MemoryHistory;

  beforeAll(async () => {
    ws = await realpath(await mkdtemp(path.join(os.tmpdir(), 'magpie-memhist-sandbox-')));
    history = new MemoryHistory({ workspace: ws });
    await history.write('write_file', '- a fact\n');
    await writeFile(path.join(ws, 'memory', 'MEMORY.md'), '- a fact\n- by hand\n');
    await history.record();
  });
  afterAll(async () => {
    await rm(ws, { recursive: true, force: true });
  });

  it('cannot write or delete .memory-history/, through symlinks made in the command', async () => {
    const status = await resolveSandbox('bwrap', { workspace: ws });
    if (status.kind !== 'bwrap') throw new AppError('INTERNAL', 'bwrap mode resolved to no sandbox');
    const config = await readFile(path.join(ws, '.memory-history', 'config'), 'utf8');
    const exec = new ToolRegistry([createExecTool(ws, { sandbox: status.sandbox })]);
    const result = await exec.execute(
      'exec',
      JSON.stringify({
        command:
          'ln -s .memory-history h; echo "[core] fsmonitor = x" >> h/config; rm -r h/objects; ' +
          'cd memory; ln -s ../.memory-history up; rm -r up/refs; echo finished',
      }),
      toolContext(ws),
    );
    expect(result.forLLM).toContain('finished');
    expect(result.forLLM).toMatch(/Read-only file system|Permission denied/);
    expect(await readFile(path.join(ws, '.memory-history', 'config'), 'utf8')).toBe(config);
    expect((await history.log()).map((e) => e.who)).toEqual(['hand edit', 'write_file']);
  });
});

/**
 * exec in the bubblewrap sandbox cannot exhaust the host: one command's
 * memory is capped (MAGPIE_EXEC_MEMORY, 1 GiB by default), and so is what it
 * writes (MAGPIE_EXEC_MAX_WRITE per file, MAGPIE_WORKSPACE_MAX_BYTES for the
 * whole workspace while it runs).
 */
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/index.js';
import { createExecTool, type ExecOptions } from '../../../src/tools/exec.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { type BwrapSandbox, resolveSandbox } from '../../../src/tools/sandbox.js';
import { toolContext } from '../../unit/tools/helpers.js';

describe('exec in a bubblewrap sandbox: memory and disk limits', () => {
  let root: string;
  let ws: string;
  let sandbox: BwrapSandbox;

  beforeAll(async () => {
    root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'magpie-sandbox-limits-')));
    ws = path.join(root, 'workspace');
    await mkdir(ws);
    const status = await resolveSandbox('bwrap', { workspace: ws });
    if (status.kind !== 'bwrap') throw new AppError('INTERNAL', 'bwrap mode resolved to no sandbox');
    sandbox = status.sandbox;
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  const exec = (command: string, options: ExecOptions = {}) =>
    new ToolRegistry([createExecTool(ws, { sandbox, ...options })]).execute(
      'exec',
      JSON.stringify({ command }),
      toolContext(ws),
    );

  it('refuses 3 GiB of memory and grants 100 MB', async () => {
    expect(sandbox.describe()).toMatch(/memory ≤1024 MiB/);
    const big = await exec('python3 -c "b = bytearray(3*1024**3); print(len(b))"');
    expect(big.isError).toBe(true);
    expect(big.forLLM).not.toContain('3221225472');
    expect(big.forLLM).toMatch(/MemoryError|Killed|killed by SIGKILL/);
    const small = await exec('python3 -c "b = bytearray(100*1024**2); print(len(b))"');
    expect(small.forLLM).toBe('104857600\n[exit code 0]');
  });

  it('stops a command that grows the workspace past MAGPIE_WORKSPACE_MAX_BYTES, with one clear line', async () => {
    const started = Date.now();
    const result = await exec(
      'i=0; while [ $i -lt 400 ]; do head -c 1048576 /dev/zero > chunk-$i; i=$((i+1)); sleep 0.01; done; echo finished',
      { workspaceMaxBytes: 50 * 1024 ** 2, workspacePollMs: 100 },
    );
    expect(result.isError).toBe(true);
    expect(result.forLLM).toMatch(
      /^Error: command stopped: it grew the workspace past its 50 MiB cap \(MAGPIE_WORKSPACE_MAX_BYTES\)/,
    );
    expect(result.forLLM).not.toContain('finished');
    expect(Date.now() - started).toBeLessThan(20_000);
    await rm(ws, { recursive: true, force: true });
    await mkdir(ws);
  });

  it('stops a single file at MAGPIE_EXEC_MAX_WRITE (256 MiB by default)', async () => {
    expect(sandbox.limits.fileSizeBytes).toBe(256 * 1024 ** 2);
    const result = await exec('head -c 300000000 /dev/zero > big; wc -c < big; rm -f big');
    expect(result.forLLM).toMatch(/File size limit exceeded|File too large/);
    expect(result.forLLM).toMatch(/^268435456$/m);
  });
});

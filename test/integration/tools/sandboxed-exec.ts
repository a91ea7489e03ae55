/** The exec tool in a real bubblewrap sandbox over a test workspace, for the sandbox tests. */
import { AppError } from '../../../src/errors/index.js';
import { createExecTool } from '../../../src/tools/exec.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { type BwrapSandbox, type BwrapSandboxOptions, resolveSandbox } from '../../../src/tools/sandbox.js';
import type { ToolResult } from '../../../src/tools/types.js';
import { toolContext } from '../../unit/tools/helpers.js';

/** The required bubblewrap sandbox for `workspace`, with `options` (fails the test when bwrap cannot run here). */
export async function bwrapSandbox(
  workspace: string,
  options: Partial<BwrapSandboxOptions> = {},
): Promise<BwrapSandbox> {
  const status = await resolveSandbox('bwrap', { workspace, ...options });
  if (status.kind !== 'bwrap') throw new AppError('INTERNAL', 'bwrap mode resolved to no sandbox');
  return status.sandbox;
}

/** Runs `command` through the exec tool in `sandbox`, as a turn of the model would. */
export function runSandboxed(workspace: string, sandbox: BwrapSandbox, command: string): Promise<ToolResult> {
  return new ToolRegistry([createExecTool(workspace, { sandbox })]).execute(
    'exec',
    JSON.stringify({ command }),
    toolContext(workspace),
  );
}

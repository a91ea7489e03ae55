/** Tearing down what a test that runs a magpie role started, in the order that leaves nothing behind. */
import { rmSync } from 'node:fs';

/**
 * Stops the role first (so nothing calls the fakes any more), then closes the
 * fakes, then removes the workspace; each may be missing when set-up failed
 * half-way.
 */
export async function stopRoleAndFakes(
  role: { stop(): Promise<void> } | undefined,
  fakes: Array<{ close(): Promise<void> } | undefined>,
  workspace?: string,
): Promise<void> {
  await role?.stop();
  for (const fake of fakes) await fake?.close();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
}

/**
 * Start-up check of `magpie start|gateway|worker`: the workspace on this
 * machine is the one the bus serves. Sessions, memory and skills live in the
 * workspace on disk, so a process with a folder of its own would answer from
 * another memory; it refuses to start instead (exit 2), saying why and how to fix it.
 */
import { ConfigError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { ensureWorkspaceId, WORKSPACE_ID_FILE } from '../workspace/identity.js';

/** What the check needs of the bus: its connection, prefix and URL. */
export interface WorkspaceCheckBus {
  /** Records the workspace id when the bus has none; resolves to the recorded one. */
  claimWorkspace(id: string): Promise<string>;
  prefix: string;
  /** Where Redis is, printable (no password). */
  describe(): string;
}

export interface WorkspaceCheckOptions {
  bus: WorkspaceCheckBus;
  /** The workspace folder this process was given (MAGPIE_WORKSPACE or --workspace). */
  workspace: string;
  logger: Logger;
}

/**
 * Gives the workspace an id when it has none (workspaces made before ids
 * existed), records it on the bus when the bus has none, and refuses when
 * the bus serves another workspace.
 *
 * @throws ConfigError (exit 2) when the bus's workspace is another one.
 * @throws AppError WORKSPACE_MISSING (exit 2) when the workspace is missing or its id unreadable.
 */
export async function checkWorkspaceIdentity(options: WorkspaceCheckOptions): Promise<string> {
  const { bus, workspace, logger } = options;
  const { id, created } = await ensureWorkspaceId(workspace);
  if (created) logger.info({ workspace, id }, `workspace id made (${WORKSPACE_ID_FILE})`);
  const recorded = await bus.claimWorkspace(id);
  if (recorded !== id) {
    throw new ConfigError(
      `the workspace ${workspace} (id ${id}) is not the one the bus at ${bus.describe()} (prefix "${bus.prefix}") serves (id ${recorded}): ` +
        'sessions, memory and skills live in the workspace, so every process on one bus must use the same folder; ' +
        'set MAGPIE_WORKSPACE to that workspace (on a shared volume such as NFS, see docs/DEPLOYMENT.md), ' +
        'or give a separate magpie its own Redis or MAGPIE_QUEUE_PREFIX',
    );
  }
  return id;
}

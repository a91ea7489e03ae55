/**
 * The core tools of every agent, built from one options object:
 * read_file, write_file, edit_file, append_file, list_dir, exec, web_fetch
 * and message (their descriptors are in catalog.ts, with every other built-in
 * tool). Each tool's output has the given secrets redacted.
 */
import { buildCoreTools, type ToolDeps } from './catalog.js';
import type { Tool } from './types.js';

export { resolveInWorkspace } from '../workspace/workspace-path.js';
export { buildTools, TOOL_CATALOG, type ToolDeps, type ToolDescriptor } from './catalog.js';
export { CANCELLED_RESULT, ToolRegistry, type ToolRegistryOptions } from './registry.js';
export { toJsonSchema } from './schema.js';

/** The core tools' options: the workspace and exec/web_fetch/read_file limits (see {@link ToolDeps}). */
export type CoreToolOptions = Pick<
  ToolDeps,
  | 'workspace'
  | 'execTimeoutMs'
  | 'execWorkspaceMaxBytes'
  | 'webAllowPrivate'
  | 'secrets'
  | 'execSandbox'
  | 'execDisabled'
  | 'execProtectedPaths'
  | 'workspaceReadOnly'
  | 'maxReadChars'
  | 'fetchMaxBytes'
  | 'fetchTimeoutMs'
>;

/**
 * Builds the core tools for one workspace.
 *
 * @example
 * const registry = new ToolRegistry(createCoreTools({ workspace: config.workspace, secrets: [config.llm.apiKey] }));
 */
export function createCoreTools(options: CoreToolOptions): Tool[] {
  return buildCoreTools(options);
}

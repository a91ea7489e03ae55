/**
 * The core tools of every agent, built from one options object:
 * read_file, write_file, edit_file, append_file, list_dir, exec, web_fetch
 * and message. Each tool's output has the given secrets redacted.
 */
import { createAppendFileTool } from './append-file.js';
import { createEditFileTool } from './edit-file.js';
import { createExecTool } from './exec.js';
import { createListDirTool } from './list-dir.js';
import { createMessageTool } from './message.js';
import { createReadFileTool } from './read-file.js';
import { redactResult } from './registry.js';
import type { BwrapSandbox } from './sandbox.js';
import type { Tool } from './types.js';
import { createWebFetchTool } from './web-fetch.js';
import { createWriteFileTool } from './write-file.js';

export { resolveInWorkspace } from '../workspace/workspace-path.js';
export { CANCELLED_RESULT, ToolRegistry, type ToolRegistryOptions } from './registry.js';
export { toJsonSchema } from './schema.js';

export interface CoreToolOptions {
  /** The workspace folder every file tool and exec is confined to. */
  workspace: string;
  /** exec's default time limit. @defaultValue 60_000 */
  execTimeoutMs?: number;
  /** Let web_fetch reach private, loopback and link-local addresses. @defaultValue false */
  webAllowPrivate?: boolean;
  /** Values to redact from any tool output (API keys, bot tokens). @defaultValue [] */
  secrets?: string[];
  /** Run exec's commands in this sandbox. @defaultValue none: on the host, behind the full deny list */
  execSandbox?: BwrapSandbox;
  /** Files and folders exec's deny list refuses to name without a sandbox (`.env`, the state folder). @defaultValue [] */
  execProtectedPaths?: string[];
  /** Characters read_file returns at most. @defaultValue 50_000 */
  maxReadChars?: number;
  /** Bytes web_fetch reads at most. @defaultValue 2 MiB */
  fetchMaxBytes?: number;
  /** web_fetch's time limit, redirects included. @defaultValue 30_000 */
  fetchTimeoutMs?: number;
}

/** Wraps a tool so its results never carry a secret value. */
function redacting(tool: Tool, secrets: string[]): Tool {
  if (secrets.length === 0) return tool;
  return {
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    ...(tool.timeLimitMs === undefined ? {} : { timeLimitMs: tool.timeLimitMs }),
    execute: async (args, ctx) => redactResult(await tool.execute(args, ctx), secrets),
  };
}

/**
 * Builds the core tools for one workspace.
 *
 * @example
 * const registry = new ToolRegistry(createCoreTools({ workspace: config.workspace, secrets: [config.llm.apiKey] }));
 */
export function createCoreTools(options: CoreToolOptions): Tool[] {
  const { workspace } = options;
  const secrets = (options.secrets ?? []).filter((s) => s.length >= 4);
  const tools: Tool[] = [
    createReadFileTool(workspace, { maxChars: options.maxReadChars }),
    createWriteFileTool(workspace),
    createEditFileTool(workspace),
    createAppendFileTool(workspace),
    createListDirTool(workspace),
    createExecTool(workspace, {
      secrets,
      timeoutMs: options.execTimeoutMs,
      sandbox: options.execSandbox,
      protectedPaths: options.execProtectedPaths,
    }),
    createWebFetchTool({
      allowPrivate: options.webAllowPrivate,
      maxBytes: options.fetchMaxBytes,
      timeoutMs: options.fetchTimeoutMs,
    }),
    createMessageTool(),
  ];
  return tools.map((tool) => redacting(tool, secrets));
}

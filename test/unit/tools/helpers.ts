/** Test helpers for the tools: a temporary workspace and a ToolContext that records sent messages. */
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../../src/log/index.js';
import type { OutboundMessageInput } from '../../../src/messages/messages.js';
import { createAppendFileTool } from '../../../src/tools/append-file.js';
import { createEditFileTool } from '../../../src/tools/edit-file.js';
import { createListDirTool } from '../../../src/tools/list-dir.js';
import { createReadFileTool } from '../../../src/tools/read-file.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import type { ToolContext } from '../../../src/tools/types.js';
import { createWriteFileTool } from '../../../src/tools/write-file.js';
import type { Confinement } from '../../../src/workspace/workspace-walk.js';

/** The core tools every agent has (createCoreTools, and buildTools with nothing else given), in order. */
export const CORE_TOOL_NAMES = [
  'read_file',
  'write_file',
  'edit_file',
  'append_file',
  'list_dir',
  'exec',
  'web_fetch',
  'message',
];

/** A fresh folder under the OS temp dir (real path); `cleanup` removes it. */
export async function tempDir(
  prefix = 'magpie-tools-',
): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await realpath(await mkdtemp(path.join(tmpdir(), prefix)));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** A context for the current chat `cli:test`; `sent` collects what the message tool sends. */
export function toolContext(
  workspace: string,
  overrides: Partial<ToolContext> = {},
): ToolContext & { sent: Omit<OutboundMessageInput, 'id'>[] } {
  const sent: Omit<OutboundMessageInput, 'id'>[] = [];
  return {
    channel: 'cli',
    chatId: 'test',
    sessionKey: 'cli:test',
    workspace,
    signal: new AbortController().signal,
    logger: silentLogger(),
    depth: 0,
    send: async (message) => {
      sent.push(message);
    },
    ...overrides,
    sent,
  };
}

/** A registry of the five file tools (read, write, edit, append, list) over `workspace` with `confinement`. */
export function fileToolRegistry(workspace: string, confinement: Confinement): ToolRegistry {
  return new ToolRegistry([
    createReadFileTool(workspace, { confinement }),
    createWriteFileTool(workspace, { confinement }),
    createEditFileTool(workspace, { confinement }),
    createAppendFileTool(workspace, { confinement }),
    createListDirTool(workspace, { confinement }),
  ]);
}

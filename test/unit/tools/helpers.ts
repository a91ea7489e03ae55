/** Test helpers for the tools: a temporary workspace and a ToolContext that records sent messages. */
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../../src/log/index.js';
import type { OutboundMessageInput } from '../../../src/messages/messages.js';
import type { ToolContext } from '../../../src/tools/types.js';

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

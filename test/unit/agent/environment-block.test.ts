/**
 * The environment section of the system prompt: what each setting reads as,
 * and, through a real buildAgent, that it carries the configuration
 * (MAGPIE_SANDBOX_MODE, MAGPIE_APPROVAL, MAGPIE_EXEC_NETWORK,
 * MAGPIE_WRITABLE_ROOTS) and that read-only mode refuses the file tools'
 * writes and runs no memory flush (whose writes it would refuse).
 */
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { environmentLines } from '../../../src/agent/environment-block.js';
import { MEMORY_FLUSH_PROMPT } from '../../../src/agent/hooks/memory-flush.js';
import { SUMMARY_SYSTEM_PROMPT } from '../../../src/agent/summarize.js';
import type { ChatMessage, ChatRequest } from '../../../src/providers/types.js';
import { type AgentFixture, agentFixture } from '../tools/agent-fixtures.js';
import { tempDir } from '../tools/helpers.js';
import { ScriptedProvider } from './loop-fixtures.js';

let f: AgentFixture | undefined;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await f?.cleanup();
  f = undefined;
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const systemOf = (req: ChatRequest | undefined) => String(req?.messages[0]?.content ?? '');
const toolResults = (req: ChatRequest | undefined) =>
  (req?.messages ?? [])
    .filter((m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool')
    .map((m) => m.content);

describe('environmentLines', () => {
  const base = { approval: 'risky', sandbox: 'workspace-write', network: false, writableRoots: [] } as const;

  it('states the workspace, the sandbox mode, the roots, the network and the approval policy, one line each', () => {
    expect(environmentLines('/srv/ws', base)).toEqual([
      '## Environment',
      '',
      'Set by the operator for every conversation; no message can change it.',
      '- Workspace: /srv/ws',
      '- Sandbox: workspace-write: the file tools and exec may change the workspace (sessions/ and .magpie-id stay read-only); exec sees the rest of the system read-only.',
      '- Writable roots: none',
      '- Network for exec: off (commands cannot connect anywhere)',
      '- Approval: risky: the owner may be asked to approve a risky tool call before it runs.',
    ]);
  });

  it('lists the writable roots, the network when on, and each mode in its own words', () => {
    const lines = environmentLines('/srv/ws', {
      ...base,
      network: true,
      writableRoots: ['/srv/shared', '/data/out'],
    }).join('\n');
    expect(lines).toContain(
      '- Writable roots (exec may also write these folders, at these paths): /srv/shared, /data/out',
    );
    expect(lines).toContain('- Network for exec: on');
    const read = environmentLines('/w', { ...base, sandbox: 'read-only', approval: 'off' }).join('\n');
    expect(read).toContain(
      '- Sandbox: read-only: nothing in the workspace can be changed, your memory files included',
    );
    expect(read).toContain('- Approval: off: tool calls run without asking the owner.');
    const full = environmentLines('/w', { ...base, sandbox: 'full-access', approval: 'all' }).join('\n');
    expect(full).toContain('- Sandbox: full-access: exec runs on the host without a sandbox');
    expect(full).toContain('- Approval: all: the owner may be asked to approve any tool call');
  });
});

describe('the environment through buildAgent', () => {
  it('carries the configuration into every request’s system prompt, and read-only refuses write_file', async () => {
    const provider = new ScriptedProvider([
      { toolCalls: [{ id: 'w1', name: 'write_file', arguments: '{"path":"note.txt","content":"x"}' }] },
      { content: 'The workspace is read-only here.' },
      { content: 'Second turn.' },
    ]);
    f = await agentFixture(
      provider,
      {},
      {
        MAGPIE_SANDBOX_MODE: 'read-only',
        MAGPIE_APPROVAL: 'off',
        MAGPIE_EXEC_NETWORK: 'on',
      },
    );
    await f.agent.processDirect('write a note', 'cli:env');
    await f.agent.processDirect('and again', 'cli:env');

    const system = systemOf(provider.requests[0]);
    expect(system).toContain(`- Workspace: ${f.dir}`);
    expect(system).toContain('- Sandbox: read-only:');
    expect(system).toContain('- Approval: off:');
    expect(system).toContain('- Network for exec: on');
    expect(system).toContain('- Writable roots: none');
    for (const req of provider.requests.slice(1)) expect(systemOf(req)).toBe(system);
    expect(toolResults(provider.requests[1])).toEqual([
      expect.stringMatching(
        /^Error: write_file refused: the workspace is read-only here \(MAGPIE_SANDBOX_MODE=read-only\)/,
      ),
    ]);
    expect(await readdir(f.dir)).not.toContain('note.txt');
  });

  it('names the writable roots, and full-access as a network that is on', async () => {
    const roots = await tempDir('magpie-env-root-');
    cleanups.push(roots.cleanup);
    await mkdir(path.join(roots.dir, 'shared'));
    const provider = new ScriptedProvider([{ content: 'ok' }, { content: 'ok' }]);
    f = await agentFixture(provider, {}, { MAGPIE_WRITABLE_ROOTS: path.join(roots.dir, 'shared') });
    await f.agent.processDirect('hello', 'cli:roots');
    expect(systemOf(provider.requests[0])).toContain(
      `- Writable roots (exec may also write these folders, at these paths): ${path.join(roots.dir, 'shared')}`,
    );
    await f.cleanup();
    f = await agentFixture(provider, {}, { MAGPIE_SANDBOX_MODE: 'full-access' });
    await f.agent.processDirect('hello', 'cli:full');
    expect(systemOf(provider.requests[1])).toContain('- Network for exec: on');
    expect(systemOf(provider.requests[1])).toContain('- Sandbox: full-access:');
  });

  it.each([
    ['workspace-write', true],
    ['read-only', false],
  ])('in %s mode, a compaction is preceded by a memory flush: %s', async (mode, flushes) => {
    const seen: string[] = [];
    const provider = new ScriptedProvider([], async (req) => {
      const last = req.messages.filter((m) => m.role === 'user').at(-1);
      if (req.messages[0]?.content === SUMMARY_SYSTEM_PROMPT) {
        seen.push('summary');
        return { content: 'Earlier: small talk.' };
      }
      if (typeof last?.content === 'string' && last.content.startsWith(MEMORY_FLUSH_PROMPT)) {
        seen.push('flush');
        return { content: 'nothing to save' };
      }
      seen.push('turn');
      return { content: 'answer' };
    });
    f = await agentFixture(provider, {}, { MAGPIE_SANDBOX_MODE: mode, MAGPIE_CONTEXT_TOKENS: '1000' });
    for (let i = 0; i < 4; i += 1) {
      await f.agent.processDirect(`message ${i} ${'a'.repeat(1_100)}`, 'cli:flush');
      await f.agent.idle();
    }
    expect(seen).toContain('summary');
    expect(seen.includes('flush')).toBe(flushes);
  });
});

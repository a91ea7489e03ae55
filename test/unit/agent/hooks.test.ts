/** Iteration hooks through the real AgentLoop: trimming oversized tool results, loop detection, memory flush. */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loopNote, loopStopReply } from '../../../src/agent/hooks/loop-detector.js';
import { MEMORY_FLUSH_PROMPT } from '../../../src/agent/hooks/memory-flush.js';
import { trimText } from '../../../src/agent/hooks/trim-tool-results.js';
import { SUMMARY_SYSTEM_PROMPT } from '../../../src/agent/summarize.js';
import type { ChatMessage, ChatRequest } from '../../../src/providers/types.js';
import { createAppendFileTool } from '../../../src/tools/append-file.js';
import { createMessageTool } from '../../../src/tools/message.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { ok, type Tool } from '../../../src/tools/types.js';
import { tempDir } from '../tools/helpers.js';
import { assertPairsWhole, constantTool, type Harness, harness, ScriptedProvider } from './loop-fixtures.js';

let h: Harness | undefined;
let cleanupWs: (() => Promise<void>) | undefined;
afterEach(async () => {
  await h?.agent.idle();
  await h?.cleanup();
  await cleanupWs?.();
  h = undefined;
  cleanupWs = undefined;
});

const toolTexts = (req: ChatRequest) =>
  req.messages
    .filter((m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool')
    .map((m) => m.content);
const lastUser = (req: ChatRequest) => {
  const users = req.messages.filter((m) => m.role === 'user');
  const last = users.at(-1);
  return typeof last?.content === 'string' ? last.content : '';
};

describe('trim oversized tool results', () => {
  it('sends a 20,000-character tool result trimmed (head + tail + marker) but stores it whole', async () => {
    const big = `HEAD${'x'.repeat(20_000)}TAIL`;
    const dump = constantTool('dump', 'returns a lot', ok(big));
    const provider = new ScriptedProvider([
      { toolCalls: [{ id: 'd1', name: 'dump', arguments: '{}' }] },
      { content: 'That was long.' },
    ]);
    h = await harness(provider, [dump]);
    const result = await h.agent.processDirect('dump it', 'cli:trim');
    expect(result.reply).toBe('That was long.');
    const sent = toolTexts(provider.requests[1]!)[0]!;
    expect(sent.length).toBeLessThan(8_200);
    expect(sent.startsWith('HEAD')).toBe(true);
    expect(sent.endsWith('TAIL')).toBe(true);
    expect(sent).toMatch(/characters of this tool result trimmed/);
    const stored = (await h.sessions.getHistory('cli:trim')).find((m) => m.role === 'tool');
    expect(stored?.content).toBe(big);
    const files = await readdir(path.join(h.dir, 'sessions'));
    const file = await readFile(
      path.join(h.dir, 'sessions', files.find((f) => f.endsWith('.jsonl'))!),
      'utf8',
    );
    expect(file).toContain(big);
  });

  it('leaves short results alone', () => {
    expect(trimText('short', 8_000)).toBe('short');
    expect(trimText('y'.repeat(9_000), 8_000).length).toBeLessThan(8_200);
  });
});

describe('loop detection', () => {
  let runs = 0;
  const lookup: Tool = {
    name: 'lookup',
    description: 'looks something up',
    parameters: z.object({ q: z.string() }),
    async execute() {
      runs += 1;
      return ok('nothing found');
    },
  };

  it('notes the third identical call, then stops the turn when the model repeats it again', async () => {
    runs = 0;
    const same = { toolCalls: [{ id: 'x', name: 'lookup', arguments: '{"q":"weather"}' }] };
    const repeat = (n: number) => ({ toolCalls: [{ ...same.toolCalls[0]!, id: `c${n}` }] });
    // Same arguments with the keys spaced differently still count as the same call.
    const provider = new ScriptedProvider([
      repeat(1),
      repeat(2),
      { toolCalls: [{ id: 'c3', name: 'lookup', arguments: '{ "q" : "weather" }' }] },
      repeat(4),
      { content: 'never reached' },
    ]);
    h = await harness(provider, [lookup]);
    const result = await h.agent.processDirect('what is the weather', 'cli:loop');
    expect(result.metrics.outcome).toBe('loop');
    expect(result.reply).toBe(loopStopReply('lookup'));
    expect(runs).toBe(2); // the third call got the note instead of running
    expect(provider.requests).toHaveLength(4);
    expect(toolTexts(provider.requests[3]!).at(-1)).toBe(loopNote('lookup', 3));
    const history = await h.sessions.getHistory('cli:loop');
    expect(assertPairsWhole(history)).toBe(true);
    expect(history.at(-1)).toMatchObject({ role: 'assistant', content: loopStopReply('lookup') });
  });

  it('lets the turn go on when the model changes course after the note', async () => {
    runs = 0;
    const call = (id: string, q: string) => ({
      toolCalls: [{ id, name: 'lookup', arguments: JSON.stringify({ q }) }],
    });
    const provider = new ScriptedProvider([
      call('a', 'w'),
      call('b', 'w'),
      call('c', 'w'),
      call('d', 'weather forecast'),
      { content: 'Sunny.' },
    ]);
    h = await harness(provider, [lookup]);
    const result = await h.agent.processDirect('weather?', 'cli:loop2');
    expect(result.metrics.outcome).toBe('ok');
    expect(result.reply).toBe('Sunny.');
    expect(runs).toBe(3);
  });
});

describe('memory flush before compaction', () => {
  it('runs a silent turn that writes MEMORY.md before the summary; its reply is neither delivered nor stored', async () => {
    const order: string[] = [];
    const provider = new ScriptedProvider([], async (req) => {
      const system = req.messages[0]?.content;
      if (system === SUMMARY_SYSTEM_PROMPT) {
        order.push('summary');
        return { content: 'The user likes tea.' };
      }
      if (lastUser(req) === MEMORY_FLUSH_PROMPT) {
        const wrote = req.messages.some((m) => m.role === 'tool');
        order.push(wrote ? 'flush-done' : 'flush');
        return wrote
          ? { content: 'done (flush reply)' }
          : {
              toolCalls: [
                {
                  id: 'f1',
                  name: 'append_file',
                  arguments: JSON.stringify({ path: 'memory/MEMORY.md', content: '- likes green tea\n' }),
                },
              ],
            };
      }
      order.push('turn');
      return { content: `noted ${'.'.repeat(400)}` };
    });
    const ws = await tempDir('magpie-flush-');
    cleanupWs = ws.cleanup;
    const dir = ws.dir;
    const tools = new ToolRegistry([createAppendFileTool(dir), createMessageTool()]);
    h = await harness(provider, [createMessageTool()], {
      summarizeAtTokens: 150,
      keepLastMessages: 2,
      memoryFlush: true,
      flushTools: tools,
      workspace: dir,
    });
    for (const text of ['I like green tea', 'and I live in Lyon', 'remember that']) {
      await h.agent.processDirect(`${text} ${'!'.repeat(200)}`, 'cli:flush');
      await h.agent.idle();
    }
    expect(order.indexOf('flush')).toBeGreaterThan(-1);
    expect(order.indexOf('flush')).toBeLessThan(order.indexOf('summary'));
    expect(order.indexOf('flush-done')).toBeLessThan(order.indexOf('summary'));
    expect(await readFile(path.join(dir, 'memory', 'MEMORY.md'), 'utf8')).toContain('likes green tea');
    expect(h.sink.sent.map((m) => m.content).join('\n')).not.toContain('flush reply');
    const log = JSON.stringify(await h.sessions.getHistory('cli:flush'));
    expect(log).not.toContain('flush reply');
    expect(log).not.toContain('[memory flush]');
    expect(await h.sessions.getSummary('cli:flush')).toBe('The user likes tea.');
  });

  it('also flushes before compacting a turn that would pass 95% of the window', async () => {
    const order: string[] = [];
    const provider = new ScriptedProvider([], async (req) => {
      if (req.messages[0]?.content === SUMMARY_SYSTEM_PROMPT) {
        order.push('summary');
        return { content: 'Earlier: small talk.' };
      }
      if (lastUser(req) === MEMORY_FLUSH_PROMPT) {
        order.push('flush');
        return { content: 'nothing to save (flush reply)' };
      }
      order.push('turn');
      return { content: 'answer' };
    });
    h = await harness(provider, [], { contextTokens: 1_000, summarizeAtTokens: 100_000, memoryFlush: true });
    for (let i = 0; i < 3; i += 1)
      await h.agent.processDirect(`message ${i} ${'a'.repeat(1_100)}`, 'cli:full');
    expect(order).toEqual(['turn', 'turn', 'turn']);
    const result = await h.agent.processDirect(`and now? ${'b'.repeat(400)}`, 'cli:full');
    expect(result.reply).toBe('answer');
    expect(order.slice(3)).toEqual(['flush', 'summary', 'turn']);
    expect(JSON.stringify(await h.sessions.getHistory('cli:full'))).not.toContain('flush reply');
  });
});

/**
 * Bad input from the model, tool-call side: arguments over the cap are
 * refused before running and stored cut down, so the chat stays usable; at
 * most N calls run per response and the rest are answered "too many tool
 * calls at once". The end-to-end cases go through the real OpenAI provider
 * and the fake OpenAI server.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  boundToolCalls,
  DEFAULT_TOOL_CALL_LIMITS,
  toolCallLimits,
  tooManyCallsText,
} from '../../../src/agent/tool-call-limits.js';
import { OpenAIProvider } from '../../../src/providers/openai/provider.js';
import type { ChatMessage, ToolCall } from '../../../src/providers/types.js';
import { ok, type Tool } from '../../../src/tools/types.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../fakes/openai-server.js';
import { assertPairsWhole, type Harness, harness } from './loop-fixtures.js';

/** A message in the API's own shape. */
interface SentMessage {
  role: string;
  content: string | null;
  tool_call_id?: string;
}

const call = (id: string, args: string, name = 'note'): ToolCall => ({ id, name, arguments: args });

describe('boundToolCalls', () => {
  it('keeps calls within the limits untouched', () => {
    const calls = [call('a', '{"text":"hi"}'), call('b', '{}')];
    expect(boundToolCalls(calls)).toEqual({ calls, refused: new Map(), cutDown: false });
  });

  it('refuses arguments over the cap and stores a short valid-JSON placeholder noting the size', () => {
    const big = JSON.stringify({ text: 'x'.repeat(300_000) });
    const { calls, refused } = boundToolCalls([call('a', big), call('b', '{}')]);
    expect(calls[0]!.id).toBe('a');
    expect(calls[0]!.arguments.length).toBeLessThan(200);
    expect(JSON.parse(calls[0]!.arguments)).toEqual({
      omitted: `${big.length} bytes of arguments, over the 262144-byte limit; not stored`,
    });
    expect(refused.get('a')).toMatch(
      new RegExp(
        `^Error: the arguments of this call are ${big.length} bytes, over the limit of 262144 bytes`,
      ),
    );
    expect(refused.has('b')).toBe(false);
  });

  it('measures bytes, not characters', () => {
    const limits = toolCallLimits({ maxArgumentBytes: 10 });
    expect(boundToolCalls([call('a', '"ééééé"')], limits).refused.has('a')).toBe(true); // 7 chars, 12 bytes
    expect(boundToolCalls([call('a', '"eeeee"')], limits).refused.has('a')).toBe(false);
  });

  it('answers calls past the count without running them; their large arguments are cut down', () => {
    const calls = Array.from({ length: 20 }, (_, i) =>
      call(`c${i}`, i === 19 ? `"${'y'.repeat(5000)}"` : '{}'),
    );
    const bounded = boundToolCalls(calls);
    expect(bounded.calls).toHaveLength(20);
    expect([...bounded.refused.keys()]).toEqual(calls.slice(16).map((c) => c.id));
    for (const text of bounded.refused.values()) expect(text).toBe(tooManyCallsText(16));
    expect(bounded.calls[18]!.arguments).toBe('{}');
    expect(JSON.parse(bounded.calls[19]!.arguments).omitted).toMatch(/not run; not stored$/);
  });

  it('renews duplicate, empty and overlong ids so every call keeps its own result', () => {
    const { calls } = boundToolCalls([
      call('same', '{}'),
      call('same', '{}'),
      call('', '{}'),
      call('i'.repeat(500), '{}'),
    ]);
    const ids = calls.map((c) => c.id);
    expect(new Set(ids).size).toBe(4);
    expect(ids[0]).toBe('same');
    for (const id of ids.slice(1)) expect(id).toMatch(/^call_[0-9a-f]{32}$/);
  });

  it('refuses a tool name no tool can have, and cuts it down', () => {
    const { calls, refused } = boundToolCalls([call('a', '{}', 'n'.repeat(10_000))]);
    expect(calls[0]!.name).toHaveLength(128);
    expect(refused.get('a')).toBe('Error: no tool has a name of 10000 characters');
  });

  it('documents its defaults and rejects nonsense limits', () => {
    expect(DEFAULT_TOOL_CALL_LIMITS).toEqual({ maxArgumentBytes: 262_144, maxCallsPerResponse: 16 });
    expect(() => toolCallLimits({ maxCallsPerResponse: 0 })).toThrow(/maxCallsPerResponse/);
    expect(() => toolCallLimits({ maxArgumentBytes: 1.5 })).toThrow(/maxArgumentBytes/);
  });
});

describe('through the OpenAI provider and the fake server', () => {
  let fake: FakeOpenAI;
  let h: Harness | undefined;
  let executed: string[];
  const note: Tool = {
    name: 'note',
    description: 'keeps a note',
    parameters: z.object({ text: z.string() }),
    async execute(args) {
      executed.push((args as { text: string }).text);
      return ok('noted');
    },
  };

  beforeAll(() => {
    executed = [];
  });
  afterEach(async () => {
    executed = [];
    await h?.agent.idle();
    await h?.cleanup();
    h = undefined;
    await fake?.close();
  });

  const provider = () =>
    new OpenAIProvider({ apiKey: 'k', baseURL: fake.baseURL, model: 'fake-model', maxRetries: 0 });
  /** The messages of the `index`th request as the API received them. */
  const messagesOf = (index: number): SentMessage[] => fake.requests[index]!.body.messages;

  it('a 10 MB argument is refused without running, and the next turn in the chat is normal and small', async () => {
    fake = await startFakeOpenAI();
    const huge = JSON.stringify({ text: 'x'.repeat(10 * 1024 * 1024) });
    fake.enqueue(
      { toolCalls: [{ id: 'big', name: 'note', arguments: huge }] },
      { content: 'That was too large; I did not save it.' },
      { content: 'Hello again.' },
    );
    h = await harness(provider(), [note]);
    const first = await h.agent.processDirect('save this book', 'cli:big');
    expect(first.reply).toBe('That was too large; I did not save it.');
    expect(executed).toEqual([]);
    const result = messagesOf(1).find((m) => m.role === 'tool')!;
    expect(result.content).toMatch(
      new RegExp(`^Error: the arguments of this call are ${huge.length} bytes, over the limit`),
    );

    const second = await h.agent.processDirect('hi', 'cli:big');
    expect(second.reply).toBe('Hello again.');
    const body = JSON.stringify(fake.requests[2]!.body);
    expect(body.length).toBeLessThan(20_000);
    const stored = (await h.sessions.getContextHistory('cli:big')) as ChatMessage[];
    expect(assertPairsWhole(stored)).toBe(true);
    const assistant = stored.find((m) => m.role === 'assistant' && m.toolCalls) as { toolCalls: ToolCall[] };
    expect(JSON.parse(assistant.toolCalls[0]!.arguments).omitted).toContain(`${huge.length} bytes`);
    const file = path.join(h.dir, 'sessions', 'cli_big.jsonl');
    expect((await stat(file)).size).toBeLessThan(20_000);
    expect(await readFile(file, 'utf8')).not.toContain('xxxxxxxxxx');
  });

  it('100 calls in one response run 16 tools; the other 84 are answered and the history stays valid', async () => {
    fake = await startFakeOpenAI();
    const calls = Array.from({ length: 100 }, (_, i) => ({
      id: `call_${i}`,
      name: 'note',
      arguments: JSON.stringify({ text: `n${i}` }),
    }));
    fake.enqueue({ toolCalls: calls }, { content: 'Done with the first sixteen.' }, { content: 'ok' });
    h = await harness(provider(), [note]);
    const turn = await h.agent.processDirect('take a hundred notes', 'cli:many');
    expect(turn.reply).toBe('Done with the first sixteen.');
    expect(executed.sort()).toEqual(
      calls
        .slice(0, 16)
        .map((_, i) => `n${i}`)
        .sort(),
    );
    const results = messagesOf(1).filter((m) => m.role === 'tool');
    expect(results).toHaveLength(100);
    expect(results.slice(0, 16).every((r) => r.content === 'noted')).toBe(true);
    expect(results.slice(16).every((r) => r.content === tooManyCallsText(16))).toBe(true);
    expect(results.map((r) => r.tool_call_id)).toEqual(calls.map((c) => c.id));
    const next = await h.agent.processDirect('thanks', 'cli:many');
    expect(next.reply).toBe('ok');
    expect(assertPairsWhole((await h.sessions.getContextHistory('cli:many')) as ChatMessage[])).toBe(true);
  });

  it('the limits are options of the loop', async () => {
    fake = await startFakeOpenAI();
    fake.enqueue(
      { toolCalls: [0, 1, 2].map((i) => ({ id: `c${i}`, name: 'note', arguments: `{"text":"t${i}"}` })) },
      { content: 'fine' },
    );
    h = await harness(provider(), [note], { toolCallLimits: { maxCallsPerResponse: 2 } });
    await h.agent.processDirect('three notes', 'cli:two');
    expect(executed.sort()).toEqual(['t0', 't1']);
    const results = messagesOf(1).filter((m) => m.role === 'tool');
    expect(results[2]!.content).toBe('too many tool calls at once; call at most 2 per response');
  });
});

/** Token budget: the model table, thresholds, API usage vs estimate, and the loop's warn / compact / refuse. */
import { afterEach, describe, expect, it } from 'vitest';
import { contextFullReply } from '../../../src/agent/loop.js';
import { contextLimitFor, DEFAULT_CONTEXT_TOKENS } from '../../../src/agent/model-limits.js';
import { estimateTokens, SUMMARY_SYSTEM_PROMPT } from '../../../src/agent/summarize.js';
import { budgetLevel, requestTokens } from '../../../src/agent/token-budget.js';
import type { ChatMessage } from '../../../src/providers/types.js';
import { ok } from '../../../src/tools/types.js';
import {
  captureLogger,
  closeHarness,
  constantTool,
  type Harness,
  harness,
  ScriptedProvider,
} from './loop-fixtures.js';

let h: Harness | undefined;
afterEach(async () => {
  h = await closeHarness(h);
});

describe('model context limits', () => {
  it('looks models up by longest prefix, falls back to 128k, and honours an override', () => {
    expect(contextLimitFor('gpt-4o')).toBe(128_000);
    expect(contextLimitFor('gpt-4o-mini-2024-07-18')).toBe(128_000);
    expect(contextLimitFor('gpt-4.1-mini')).toBe(1_047_576);
    expect(contextLimitFor('o3-mini')).toBe(200_000);
    expect(contextLimitFor('o4-mini')).toBe(200_000);
    expect(contextLimitFor('llama3:8b')).toBe(8_192);
    expect(contextLimitFor('llama3.1:70b')).toBe(128_000);
    expect(contextLimitFor('openrouter/GPT-4o')).toBe(128_000);
    expect(contextLimitFor('some-local-model')).toBe(DEFAULT_CONTEXT_TOKENS);
    expect(contextLimitFor('gpt-4o', 50_000)).toBe(50_000);
  });
});

describe('thresholds', () => {
  it('is ok below 80%, warns from 80% to 95%, and is over above 95%', () => {
    expect(budgetLevel(799, 1_000)).toBe('ok');
    expect(budgetLevel(800, 1_000)).toBe('warn');
    expect(budgetLevel(950, 1_000)).toBe('warn');
    expect(budgetLevel(951, 1_000)).toBe('over');
  });

  it('estimates ~4 characters a token plus 4 a message, and prefers the usage the API reported', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'x'.repeat(400) },
      { role: 'user', content: 'y'.repeat(40) },
    ];
    expect(estimateTokens(messages)).toBe(100 + 10 + 8);
    expect(requestTokens(messages)).toBe(118);
    const later: ChatMessage[] = [
      ...messages,
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'z'.repeat(40) },
    ];
    // 700 prompt + 20 completion reported for the first two; the new user message is estimated (10 + 4).
    expect(requestTokens(later, { promptTokens: 700, completionTokens: 20, sentMessages: 2 })).toBe(734);
  });
});

describe('the loop keeps within the window', () => {
  const noop = constantTool('noop', 'does nothing', ok('done'));

  it('logs a warning at 80% (from the usage the API reported)', async () => {
    const provider = new ScriptedProvider([
      {
        toolCalls: [{ id: 'n1', name: 'noop', arguments: '{}' }],
        usage: { promptTokens: 850, completionTokens: 10, totalTokens: 860 },
      },
      { content: 'fine' },
    ]);
    const { logger, lines } = captureLogger();
    h = await harness(provider, [noop], { contextTokens: 1_000, logger });
    const result = await h.agent.processDirect('hello', 'cli:warn');
    expect(result.reply).toBe('fine');
    const warnings = lines.filter((l) => l.msg === 'context window over 80% full');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ limit: 1_000 });
    expect(Number(warnings[0]!.tokens)).toBeGreaterThanOrEqual(860);
  });

  it('compacts towards 80% before a call that would pass 95%, then answers', async () => {
    const provider = new ScriptedProvider([], async (req) => {
      if (req.messages[0]?.content === SUMMARY_SYSTEM_PROMPT) return { content: 'Earlier: small talk.' };
      return { content: 'answer' };
    });
    h = await harness(provider, [], { contextTokens: 1_000, summarizeAtTokens: 100_000 });
    // Three turns of ~288 tokens each stay under 950; the fourth message (~106 tokens) would pass it.
    for (let i = 0; i < 3; i += 1)
      await h.agent.processDirect(`message ${i} ${'a'.repeat(1_100)}`, 'cli:big');
    const before = provider.requests.length;
    expect(provider.requests.every((r) => r.messages[0]!.content !== SUMMARY_SYSTEM_PROMPT)).toBe(true);
    const result = await h.agent.processDirect(`and now? ${'b'.repeat(400)}`, 'cli:big');
    expect(result.reply).toBe('answer');
    const after = provider.requests.slice(before);
    expect(after[0]!.messages[0]!.content).toBe(SUMMARY_SYSTEM_PROMPT);
    const call = after.at(-1)!;
    expect(estimateTokens(call.messages)).toBeLessThanOrEqual(950);
    expect(call.messages[0]!.content).toContain('Earlier: small talk.');
    expect(await h.sessions.getSummary('cli:big')).toBe('Earlier: small talk.');
  });

  it('measures the request as sent: a huge tool result trimmed by the hooks does not force a compaction', async () => {
    const dump = constantTool('dump', 'returns a lot', ok('d'.repeat(50_000)));
    const provider = new ScriptedProvider([
      { toolCalls: [{ id: 'd1', name: 'dump', arguments: '{}' }] },
      { content: 'read it' },
    ]);
    h = await harness(provider, [dump], { contextTokens: 10_000 });
    const result = await h.agent.processDirect('dump', 'cli:dump');
    expect(result.reply).toBe('read it');
    expect(provider.requests).toHaveLength(2);
    expect(provider.requests.some((r) => r.messages[0]!.content === SUMMARY_SYSTEM_PROMPT)).toBe(false);
    expect(estimateTokens(provider.requests[1]!.messages)).toBeLessThan(3_000);
  });

  it('replies with a clear error when the request is still over the limit after compaction', async () => {
    const provider = new ScriptedProvider([{ content: 'never' }]);
    h = await harness(provider, [], { contextTokens: 1_000 });
    const result = await h.agent.processDirect('z'.repeat(6_000), 'cli:huge');
    expect(result.metrics.outcome).toBe('context_full');
    expect(result.reply).toMatch(/no longer fits in the model's context window/);
    expect(result.reply).toMatch(/\/new/);
    expect(result.reply).toBe(contextFullReply(Number(/about (\d+)/.exec(result.reply!)![1]), 1_000));
    expect(provider.requests).toHaveLength(0);
  });
});

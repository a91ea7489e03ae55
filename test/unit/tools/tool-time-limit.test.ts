/**
 * A tool call past its time limit inside a real AgentLoop turn: the model
 * reads "timed out" and the turn goes on to its answer, while a turn in
 * another chat is not held up by the stuck call.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseConfig } from '../../../src/app/config.js';
import { ConfigError } from '../../../src/errors/index.js';
import type { ChatMessage, ChatRequest } from '../../../src/providers/types.js';
import type { Tool } from '../../../src/tools/types.js';
import { closeHarness, type Harness, harness, ScriptedProvider } from '../agent/loop-fixtures.js';

/** Never resolves; reports each abort of its signal. */
function stuckTool(timeLimitMs: number, aborted: string[]): Tool {
  return {
    name: 'stuck',
    description: 'Never finishes',
    parameters: z.object({}),
    timeLimitMs,
    execute: (_args, ctx) => {
      ctx.signal.addEventListener('abort', () => aborted.push(ctx.sessionKey), { once: true });
      return new Promise(() => {});
    },
  };
}

/** Chat A calls the stuck tool, then answers with what the tool said; chat B answers at once. */
async function answer(req: ChatRequest) {
  const last = req.messages[req.messages.length - 1] as ChatMessage;
  if (last.role === 'tool') return { content: `after the tool: ${last.content}` };
  if (last.role === 'user' && last.content === 'A') {
    return { toolCalls: [{ id: 'call-a', name: 'stuck', arguments: '{}' }] };
  }
  return { content: 'B answered' };
}

let h: Harness | undefined;
afterEach(async () => {
  h = await closeHarness(h);
});

describe('tool time limits in a turn', () => {
  it('answers "timed out" to the model, aborts the tool, and the turn goes on', async () => {
    const aborted: string[] = [];
    h = await harness(new ScriptedProvider([], answer), [stuckTool(100, aborted)]);
    const result = await h.agent.processDirect('A', 'cli:a');
    expect(result.reply).toBe(
      'after the tool: Error: stuck timed out after 0.1 s and was stopped; try a smaller step, or another way to get there',
    );
    expect(result.metrics.outcome).toBe('ok');
    expect(aborted).toEqual(['cli:a']);
  });

  it('a stuck call in one chat does not hold up a turn in another', async () => {
    const aborted: string[] = [];
    h = await harness(new ScriptedProvider([], answer), [stuckTool(1_500, aborted)]);
    const stuckTurn = h.agent.processDirect('A', 'cli:a');
    const other = await h.agent.processDirect('B', 'cli:b');
    expect(other.reply).toBe('B answered');
    expect(aborted).toEqual([]); // chat A is still waiting on its tool
    expect((await stuckTurn).reply).toContain('timed out after 1.5 s');
    expect(aborted).toEqual(['cli:a']);
  });
});

describe('MAGPIE_TOOL_TIMEOUT', () => {
  const env = { MAGPIE_WORKSPACE: '/tmp/magpie-tool-timeout-ws', MAGPIE_TIMEZONE: 'UTC' };

  it('defaults to 2 minutes and takes a duration', () => {
    expect(parseConfig(env).tools.timeoutMs).toBe(120_000);
    expect(parseConfig({ ...env, MAGPIE_TOOL_TIMEOUT: '5m' }).tools.timeoutMs).toBe(300_000);
  });

  it('refuses 0 and more than 24 h with one line naming the variable', () => {
    for (const bad of ['0', '25h', 'soon']) {
      expect(() => parseConfig({ ...env, MAGPIE_TOOL_TIMEOUT: bad })).toThrow(ConfigError);
      expect(() => parseConfig({ ...env, MAGPIE_TOOL_TIMEOUT: bad })).toThrow(/^MAGPIE_TOOL_TIMEOUT /);
    }
  });
});

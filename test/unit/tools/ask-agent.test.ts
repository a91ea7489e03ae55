/**
 * ask_agent's own rules: only the agents of `canAsk`, never from a turn that
 * was itself asked (depth 1) or from a helper, the answer handed back named,
 * and a failure said plainly.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log/index.js';
import { type AgentAsker, createAskAgentTool } from '../../../src/tools/ask-agent.js';
import type { ToolContext } from '../../../src/tools/types.js';

function context(over: Partial<ToolContext> = {}): ToolContext {
  return {
    channel: 'telegram',
    chatId: '42',
    sessionKey: 'telegram:42',
    workspace: '/tmp',
    signal: new AbortController().signal,
    logger: silentLogger(),
    send: async () => undefined,
    depth: 0,
    ...over,
  };
}

function asker(
  answer: (agent: string, question: string) => Promise<string>,
): AgentAsker & { asked: string[] } {
  const asked: string[] = [];
  return {
    self: 'main',
    agents: ['work'],
    asked,
    ask: async (agent, question) => {
      asked.push(`${agent}: ${question}`);
      return answer(agent, question);
    },
  };
}

describe('ask_agent', () => {
  it('asks an agent of canAsk and hands back its answer, as untrusted text', async () => {
    const a = asker(async () => 'Friday');
    const tool = createAskAgentTool(a);
    const result = await tool.execute({ agent: 'work', question: 'when is the deadline?' }, context());
    expect(result).toEqual({ forLLM: 'work answered:\nFriday' });
    expect(a.asked).toEqual(['work: when is the deadline?']);
    expect(tool.untrustedOutput).toBeDefined();
  });

  it('refuses an agent it may not ask, a turn that was itself asked, and a helper, asking nobody', async () => {
    const a = asker(async () => 'never');
    const tool = createAskAgentTool(a);
    const other = await tool.execute({ agent: 'kids', question: 'q' }, context());
    expect(other).toMatchObject({ isError: true, forLLM: expect.stringContaining('you may ask work') });
    const asked = await tool.execute(
      { agent: 'work', question: 'q' },
      context({ channel: 'cli', chatId: 'ask-work' }),
    );
    expect(asked).toMatchObject({ isError: true, forLLM: expect.stringContaining('cannot ask another') });
    const helper = await tool.execute({ agent: 'work', question: 'q' }, context({ depth: 1 }));
    expect(helper).toMatchObject({ isError: true });
    expect(a.asked).toEqual([]);
  });

  it('says plainly when the other agent does not answer', async () => {
    const tool = createAskAgentTool(asker(async () => Promise.reject(new Error('no answer within 600 s'))));
    const result = await tool.execute({ agent: 'work', question: 'q' }, context());
    expect(result).toMatchObject({
      isError: true,
      forLLM: 'Error: work did not answer: no answer within 600 s',
    });
  });
});

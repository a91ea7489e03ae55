/** subagent through a real buildAgent: the helper's whole text returns to the model; tool sets and the depth limit. */
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatMessage, ChatRequest } from '../../../src/providers/types.js';
import { ScriptedProvider } from '../agent/loop-fixtures.js';
import { type AgentFixture, agentFixture } from './agent-fixtures.js';
import { toolContext } from './helpers.js';

let f: AgentFixture | undefined;
afterEach(async () => {
  await f?.cleanup();
  f = undefined;
});

const lastUser = (req: ChatRequest) => {
  const last = req.messages.filter((m) => m.role === 'user').at(-1);
  return typeof last?.content === 'string' ? last.content : '';
};
const lastTool = (req: ChatRequest) =>
  req.messages.filter((m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool').at(-1)?.content;
const toolNames = (req: ChatRequest) => (req.tools ?? []).map((t) => t.name).sort();
const call = (id: string, name: string, args: object) => ({
  toolCalls: [{ id, name, arguments: JSON.stringify(args) }],
});

describe('subagent', () => {
  it('returns the helper’s final text, whole, to the model', async () => {
    const findings = `The capital is Paris. ${'Details. '.repeat(700)}END`;
    const provider = new ScriptedProvider([], async (req) => {
      const user = lastUser(req);
      if (user.startsWith('[helper task]')) return { content: findings };
      if (req.messages.at(-1)?.role === 'tool') return { content: 'It is Paris.' };
      return call('s1', 'subagent', { task: 'find the capital of France', label: 'geo' });
    });
    f = await agentFixture(provider);
    const result = await f.agent.processDirect('capital of France?', 'cli:sub');
    expect(result.reply).toBe('It is Paris.');
    const helperReq = provider.requests.find((r) => lastUser(r).startsWith('[helper task]'))!;
    expect(lastUser(helperReq)).toContain('Task: find the capital of France');
    const back = lastTool(provider.requests.at(-1)!)!;
    expect(back).toContain(findings);
    expect(back).toMatch(/^Helper sub-[0-9a-f-]+ \(geo\) answered:/);
    // The helper had its own session; the user's session holds the whole tool result too.
    const main = await f.sessions.getHistory('cli:sub');
    expect(main.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(String(main[2]!.content)).toContain(findings);
    expect(f.sink.sent).toEqual([]);
  });

  it('gives helpers no spawn, message or cron, and no subagent at the depth limit (2)', async () => {
    const seen: Record<string, string[]> = {};
    const provider = new ScriptedProvider([], async (req) => {
      const user = lastUser(req);
      const done = req.messages.at(-1)?.role === 'tool';
      if (user.includes('Task: level two')) {
        seen.two = toolNames(req);
        return { content: 'level two result' };
      }
      if (user.includes('Task: level one')) {
        seen.one ??= toolNames(req);
        return done
          ? { content: `level one got: ${lastTool(req)}` }
          : call('b', 'subagent', { task: 'level two' });
      }
      seen.main ??= toolNames(req);
      return done ? { content: `main got: ${lastTool(req)}` } : call('a', 'subagent', { task: 'level one' });
    });
    const queue = { jobs: [] as unknown[], enqueue: async (job: unknown) => void queue.jobs.push(job) };
    f = await agentFixture(provider, { helperQueue: queue });
    const result = await f.agent.processDirect('delegate twice', 'cli:depth');
    expect(result.reply).toContain('level two result');
    expect(seen.main).toEqual(expect.arrayContaining(['spawn', 'subagent', 'message', 'load_skill']));
    expect(seen.one).toContain('subagent');
    expect(seen.one).not.toContain('spawn');
    expect(seen.one).not.toContain('message');
    expect(seen.two).not.toContain('subagent');
    expect(seen.two).not.toContain('spawn');
    expect(seen.two).toEqual(expect.arrayContaining(['read_file', 'write_file', 'exec', 'load_skill']));
    expect(f.helpers.toolNames(2)).not.toContain('subagent');
  });

  it('refuses to delegate beyond the depth limit', async () => {
    const provider = new ScriptedProvider([]);
    f = await agentFixture(provider);
    const tool = f.tools.get('subagent')!;
    const refused = await tool.execute({ task: 'go deeper' }, toolContext(f.dir, { depth: 2 }));
    expect(refused.isError).toBe(true);
    expect(refused.forLLM).toMatch(/delegation depth limit reached \(2\)/);
    expect(provider.requests).toHaveLength(0);
  });
});

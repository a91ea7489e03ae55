/** load_skill and the skills in the prompt, through a real buildAgent: always, on demand, malformed, changed files. */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
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

async function skill(dir: string, folder: string, text: string): Promise<void> {
  await mkdir(path.join(dir, 'skills', folder), { recursive: true });
  await writeFile(path.join(dir, 'skills', folder, 'SKILL.md'), text);
}

const toolResult = (req: ChatRequest) =>
  req.messages.filter((m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool').at(-1)?.content;

describe('skills and load_skill', () => {
  it('puts always-skills in the prompt in full, lists the others by description, and loads one on demand', async () => {
    const provider = new ScriptedProvider([
      { toolCalls: [{ id: 'l1', name: 'load_skill', arguments: '{"name":"trip-planner"}' }] },
      { content: 'Following the trip planner.' },
    ]);
    f = await agentFixture(provider);
    await skill(
      f.dir,
      'greet',
      '---\nname: greet\ndescription: Greeting rules\nalways: true\n---\nAlways say hello first.\n',
    );
    await skill(
      f.dir,
      'trip-planner',
      '---\nname: trip-planner\ndescription: Plan a trip step by step\n---\n1. Ask dates.\n2. Check trains.\n',
    );
    const result = await f.agent.processDirect('plan my trip', 'cli:skills');
    expect(result.reply).toBe('Following the trip planner.');
    const system = String(provider.requests[0]!.messages[0]!.content);
    expect(system).toContain('Always say hello first.');
    expect(system).toContain('- trip-planner: Plan a trip step by step');
    expect(system).not.toContain('Check trains.');
    expect(provider.requests[0]!.tools?.map((t) => t.name)).toContain('load_skill');
    expect(toolResult(provider.requests[1]!)).toBe(
      '# Skill: trip-planner\n\n1. Ask dates.\n2. Check trains.',
    );
  });

  it('picks up an edited skill without a restart, reports a malformed one, and names the skills there are', async () => {
    f = await agentFixture(new ScriptedProvider([]));
    const tool = f.tools.get('load_skill')!;
    const ctx = toolContext(f.dir);
    await skill(f.dir, 'notes', '---\nname: notes\ndescription: Take notes\n---\nVersion one.\n');
    expect((await tool.execute({ name: 'notes' }, ctx)).forLLM).toContain('Version one.');
    await skill(f.dir, 'notes', '---\nname: notes\ndescription: Take notes\n---\nVersion two, longer.\n');
    expect((await tool.execute({ name: 'notes' }, ctx)).forLLM).toContain('Version two, longer.');

    await skill(f.dir, 'broken', '---\nname: broken\n---\nno description\n');
    const broken = await tool.execute({ name: 'broken' }, ctx);
    expect(broken.isError).toBe(true);
    expect(broken.forLLM).toMatch(/skill broken is malformed: description is required/);

    const missing = await tool.execute({ name: 'nope' }, ctx);
    expect(missing.isError).toBe(true);
    expect(missing.forLLM).toMatch(/no skill named nope; available: notes/);
  });
});

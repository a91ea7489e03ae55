/**
 * The prompt layout through the AgentLoop with the real ContextBuilder and
 * JSONL sessions: two loops (two workers) with their tools registered in
 * different orders take turns on one chat, and every request still begins
 * with the one before; memory written during a turn changes nothing already
 * sent and shows up in the next turn's context block; a redone turn adds no
 * second note.
 */
import { appendFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ContextBuilder } from '../../../src/agent/context.js';
import { AgentLoop } from '../../../src/agent/loop.js';
import { noteOf } from '../../../src/agent/prompt-note.js';
import { ProviderError } from '../../../src/errors/index.js';
import { MemoryStore } from '../../../src/memory/store.js';
import type { ChatRequest } from '../../../src/providers/types.js';
import { JsonlSessionStore } from '../../../src/sessions/jsonl-store.js';
import { SkillsLoader } from '../../../src/skills/loader.js';
import { createAppendFileTool } from '../../../src/tools/append-file.js';
import { createListDirTool } from '../../../src/tools/list-dir.js';
import { createReadFileTool } from '../../../src/tools/read-file.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import type { Tool } from '../../../src/tools/types.js';
import { inbound, RecordingSink, ScriptedProvider } from './loop-fixtures.js';

let ws: string | undefined;
afterEach(async () => {
  if (ws) await rm(ws, { recursive: true, force: true });
  ws = undefined;
});

/** A request as a provider would cache over it: the tools, then the messages. */
const serialised = (req: ChatRequest) => JSON.stringify({ tools: req.tools ?? [], messages: req.messages });

async function setup() {
  ws = await mkdtemp(path.join(tmpdir(), 'magpie-layout-'));
  await mkdir(path.join(ws, 'memory'), { recursive: true });
  await writeFile(path.join(ws, 'memory', 'MEMORY.md'), '# Memory\n\n- likes tea\n');
  await writeFile(path.join(ws, 'AGENTS.md'), 'Be brief.');
  let clock = new Date('2026-05-01T09:00:00Z');
  const now = () => clock;
  const sessions = new JsonlSessionStore({ dir: path.join(ws, 'sessions') });
  const memory = new MemoryStore({ workspace: ws, timezone: 'UTC', now });
  const skills = new SkillsLoader({ dir: path.join(ws, 'skills') });
  const workspace = ws;
  const loop = (provider: ScriptedProvider, tools: Tool[]) => {
    const registry = new ToolRegistry(tools);
    return new AgentLoop({
      provider,
      tools: registry,
      sessions,
      context: new ContextBuilder({
        workspace,
        memory,
        skills,
        tools: () => registry.summaries(),
        timezone: 'UTC',
        now,
      }),
      logger: pino({ level: 'silent' }),
      outbound: new RecordingSink(),
      workspace,
    });
  };
  const tools = () => [
    createReadFileTool(workspace),
    createAppendFileTool(workspace),
    createListDirTool(workspace),
  ];
  return {
    workspace,
    sessions,
    loop,
    tools,
    tick: (minutes: number) => (clock = new Date(clock.getTime() + minutes * 60_000)),
  };
}

describe('the prompt layout through the agent loop', () => {
  it('keeps each request the prefix of the next across two workers with differently ordered tools', async () => {
    const { loop, tools, tick } = await setup();
    const script = (req: ChatRequest) => {
      const last = req.messages.at(-1)!;
      const wantsTool = last.role === 'user' && JSON.stringify(last.content).includes('look around');
      return Promise.resolve(
        wantsTool
          ? { toolCalls: [{ id: `c${req.messages.length}`, name: 'list_dir', arguments: '{"path":"."}' }] }
          : { content: `answer after ${req.messages.length} messages` },
      );
    };
    const a = new ScriptedProvider([], script);
    const b = new ScriptedProvider([], script);
    const [readFile, appendFile, listDir] = tools();
    const workerA = loop(a, [readFile!, appendFile!, listDir!]);
    const workerB = loop(b, [listDir!, readFile!, appendFile!]);
    const order: ChatRequest[] = [];
    const texts = ['hello', 'please look around', 'thanks', 'one more thing', 'bye'];
    for (const [i, text] of texts.entries()) {
      const worker = i % 2 === 0 ? workerA : workerB;
      const provider = i % 2 === 0 ? a : b;
      const before = provider.requests.length;
      await worker.processMessage(inbound({ content: text, chatId: 'layout', id: `m${i}` }));
      order.push(...provider.requests.slice(before));
      tick(7);
    }
    expect(order.length).toBe(6); // one turn called a tool
    for (let i = 1; i < order.length; i += 1) {
      const [before, after] = [serialised(order[i - 1]!), serialised(order[i]!)];
      expect(after.startsWith(before.slice(0, -2)), `request ${i + 1} extends request ${i}`).toBe(true);
    }
    expect(order[0]!.tools!.map((t) => t.name)).toEqual(['append_file', 'list_dir', 'read_file']);
    expect(order.every((r) => r.cacheKey === 'telegram:layout')).toBe(true);
  });

  it('leaves what was sent alone when memory is written mid-turn, and tells the next turn', async () => {
    const { loop, tools, tick } = await setup();
    const provider = new ScriptedProvider([
      {
        toolCalls: [
          {
            id: 'w1',
            name: 'append_file',
            arguments: JSON.stringify({ path: 'memory/MEMORY.md', content: '- has a cat\n' }),
          },
        ],
      },
      { content: 'noted' },
      { content: 'you have a cat' },
    ]);
    const agent = loop(provider, tools());
    await agent.processMessage(inbound({ content: 'I have a cat', chatId: 'mem', id: 'x1' }));
    tick(3);
    await agent.processMessage(inbound({ content: 'what do I have?', chatId: 'mem', id: 'x2' }));
    const [first, second, third] = provider.requests.map(serialised);
    expect(second!.startsWith(first!.slice(0, -2))).toBe(true);
    expect(third!.startsWith(second!.slice(0, -2))).toBe(true);
    const lastUser = JSON.stringify(provider.requests[2]!.messages.at(-1));
    expect(lastUser).toContain('memory/MEMORY.md (added)');
    expect(lastUser).toContain('has a cat');
    expect(provider.requests[2]!.messages[0]!.content).not.toContain('has a cat');
  });

  it('adds no second note when a redone turn finds its message already stored', async () => {
    const { loop, tools, sessions, workspace } = await setup();
    // The first attempt stored the message and failed at the model (a turn whose answer is stored is not asked again).
    const provider = new ScriptedProvider([
      new ProviderError('PROVIDER_SERVER', 'the model endpoint failed (500)', { transient: true }),
      { content: 'second try' },
    ]);
    const agent = loop(provider, tools());
    const message = inbound({ content: 'hello', chatId: 'redo', id: 'same-id' });
    await expect(agent.processMessage(message)).rejects.toMatchObject({ code: 'PROVIDER_SERVER' });
    await appendFile(path.join(workspace, 'memory', 'MEMORY.md'), '- changed in between\n');
    await agent.processMessage(message);
    const users = (await sessions.getHistory('telegram:redo')).filter((m) => m.role === 'user');
    expect(users).toHaveLength(1);
    expect(noteOf(users[0]!)?.snapshot).toContain('likes tea');
    const [first, second] = provider.requests.map(serialised);
    expect(second!.startsWith(first!.slice(0, -2))).toBe(true);
  });
});

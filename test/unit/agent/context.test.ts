import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ContextBuilder, type SessionInfoForPrompt } from '../../../src/agent/context.js';
import { MemoryStore } from '../../../src/memory/store.js';
import type { ChatMessage } from '../../../src/providers/types.js';
import type { SessionEntry } from '../../../src/sessions/types.js';
import { SkillsLoader } from '../../../src/skills/loader.js';

let ws: string;
let clock: Date;
const now = () => clock;
const session: SessionInfoForPrompt = { channel: 'telegram', chatId: '42', sessionKey: 'telegram:42' };

function builder(options: { bootstrapMaxChars?: number; timezone?: string } = {}) {
  const timezone = options.timezone ?? 'Europe/Lisbon';
  return new ContextBuilder({
    workspace: ws,
    memory: new MemoryStore({ workspace: ws, timezone, now }),
    skills: new SkillsLoader({ dir: path.join(ws, 'skills') }),
    tools: () => [
      { name: 'read_file', description: 'Read a file\nmore detail' },
      { name: 'write_file', description: 'Write a file' },
    ],
    timezone,
    now,
    ...(options.bootstrapMaxChars ? { bootstrapMaxChars: options.bootstrapMaxChars } : {}),
  });
}

async function put(rel: string, text: string) {
  const file = path.join(ws, rel);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
  return file;
}

beforeEach(async () => {
  ws = await mkdtemp(path.join(tmpdir(), 'magpie-context-'));
  clock = new Date('2026-11-22T10:15:42Z');
});
afterEach(async () => {
  await rm(ws, { recursive: true, force: true });
});

describe('ContextBuilder.buildSystemPrompt', () => {
  it('puts the sections in DESIGN order: identity and tools, bootstrap, skills, memory, session, summary', async () => {
    await put('AGENTS.md', 'AGENTS-TEXT');
    await put('SOUL.md', 'SOUL-TEXT');
    await put('USER.md', 'USER-TEXT');
    await put('IDENTITY.md', 'IDENTITY-TEXT');
    await put(
      'skills/greet/SKILL.md',
      '---\nname: greet\ndescription: GREET-DESC\nalways: true\n---\nGREET-BODY',
    );
    await put('skills/trip/SKILL.md', '---\nname: trip\ndescription: TRIP-DESC\n---\nTRIP-BODY');
    await put('memory/MEMORY.md', '# Memory\n\nMEMORY-FACT');
    await put('memory/202611/20261122.md', '# 2026-11-22\n\nDAILY-NOTE');
    const prompt = await builder().buildSystemPrompt({ ...session, summary: 'SUMMARY-TEXT' });

    const order = [
      'You are magpie',
      '- read_file: Read a file',
      'Current time:',
      'AGENTS-TEXT',
      'SOUL-TEXT',
      'USER-TEXT',
      'IDENTITY-TEXT',
      'GREET-BODY',
      'trip: TRIP-DESC',
      'MEMORY-FACT',
      'DAILY-NOTE',
      'Chat ID: 42',
      'SUMMARY-TEXT',
    ].map((marker) => {
      const at = prompt.indexOf(marker);
      expect(at, marker).toBeGreaterThanOrEqual(0);
      return at;
    });
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(prompt).not.toContain('TRIP-BODY');
    expect(prompt).toContain('load_skill');
    expect(prompt).not.toContain('more detail');
  });

  it('tells the model where memory lives and when to write it', async () => {
    const prompt = await builder().buildSystemPrompt(session);
    expect(prompt).toContain(path.join(ws, 'memory', 'MEMORY.md'));
    expect(prompt).toContain(path.join('memory', '202611', '20261122.md'));
    expect(prompt).toMatch(/durable fact about the user/);
    expect(prompt).toMatch(/edit_file/);
    expect(prompt).toContain(`Your workspace is ${ws}`);
  });

  it('shows the time in the configured zone, to the minute, so prompts within a minute are identical', async () => {
    const b = builder();
    const first = await b.buildSystemPrompt(session);
    expect(first).toContain('Current time: Sunday 2026-11-22 10:15 (Europe/Lisbon)');
    clock = new Date('2026-11-22T10:15:58Z');
    expect(await b.buildSystemPrompt(session)).toBe(first);
    const tokyo = await builder({ timezone: 'Asia/Tokyo' }).buildSystemPrompt(session);
    expect(tokyo).toContain('2026-11-22 19:15 (Asia/Tokyo)');
  });

  it('skips missing bootstrap files and empty memory', async () => {
    await put('SOUL.md', 'SOUL-TEXT');
    const prompt = await builder().buildSystemPrompt(session);
    expect(prompt).toContain('## SOUL.md');
    expect(prompt).not.toContain('## AGENTS.md');
    expect(prompt).not.toContain('# Memory');
    expect(prompt).not.toContain('# Skills');
    expect(prompt).not.toContain('Summary of the earlier conversation');
  });

  it('caps each bootstrap file with a visible truncation marker', async () => {
    await put('AGENTS.md', 'a'.repeat(150));
    await put('USER.md', 'short');
    const prompt = await builder({ bootstrapMaxChars: 100 }).buildSystemPrompt(session);
    expect(prompt).toContain(`${'a'.repeat(100)}\n\n[… truncated 50 chars]`);
    expect(prompt).not.toContain('a'.repeat(101));
    expect(prompt).toContain('short');
  });

  it('re-reads a bootstrap file only when its mtime changes', async () => {
    const fixed = new Date('2026-01-01T00:00:00Z');
    const file = await put('USER.md', 'name: Ana');
    await utimes(file, fixed, fixed);
    const b = builder();
    expect(await b.buildSystemPrompt(session)).toContain('name: Ana');
    const reads = b.fileReads;
    await b.buildSystemPrompt(session);
    expect(b.fileReads).toBe(reads);

    await writeFile(file, 'name: Bea');
    await utimes(file, fixed, fixed);
    expect(await b.buildSystemPrompt(session)).toContain('name: Ana');

    const later = new Date('2026-01-02T00:00:00Z');
    await utimes(file, later, later);
    expect(await b.buildSystemPrompt(session)).toContain('name: Bea');
    expect(b.fileReads).toBe(reads + 1);
  });

  it('names the sender in group chats', async () => {
    const prompt = await builder().buildSystemPrompt({ ...session, isGroup: true, senderName: 'Ana' });
    expect(prompt).toContain('This is a group chat; the latest message is from Ana.');
  });

  it('uses the configured agent name', async () => {
    const b = new ContextBuilder({
      workspace: ws,
      memory: new MemoryStore({ workspace: ws, now }),
      skills: new SkillsLoader({ dir: path.join(ws, 'skills') }),
      tools: () => [],
      now,
      agentName: 'jackdaw',
    });
    const prompt = await b.buildSystemPrompt(session);
    expect(prompt).toContain('You are jackdaw');
    expect(prompt).toContain('No tools are available');
  });
});

describe('ContextBuilder.buildMessages', () => {
  it('returns system, sanitised history without timestamps, then the current messages', async () => {
    const history = [
      { role: 'tool', toolCallId: 'orphan', content: 'x', ts: '2026' },
      { role: 'user', content: 'earlier', ts: '2026' },
      { role: 'assistant', content: 'reply', ts: '2026' },
    ] as SessionEntry[];
    const current: ChatMessage[] = [{ role: 'user', content: 'now' }];
    const messages = await builder().buildMessages({ history, session, current });
    expect(messages[0]?.role).toBe('system');
    expect(messages.slice(1)).toEqual([
      { role: 'user', content: 'earlier' },
      { role: 'assistant', content: 'reply' },
      { role: 'user', content: 'now' },
    ]);
  });
});

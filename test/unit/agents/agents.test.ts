/**
 * agents.json read and checked (one line naming the field for each kind of
 * mistake; files and workspaces where an agent's tools could reach them
 * refused), routes matched in order (channel, account, chat, sender; the
 * API's named agent), and an agent's configuration (its prefix, state
 * folder, model, tools, sandbox, heartbeat and budget on top of `.env`'s).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentConfig, agentPrefix } from '../../../src/agents/agent-config.js';
import { agentFor, channelAccount } from '../../../src/agents/routes.js';
import { type AgentsFile, loadAgents } from '../../../src/agents/spec.js';
import { parseConfig } from '../../../src/app/config.js';
import { ConfigError } from '../../../src/errors/index.js';

let root: string;
let workspace: string;
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'magpie-agents-unit-'));
  workspace = path.join(root, 'main');
  mkdirSync(workspace);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function load(json: string, file = path.join(root, 'agents.json')): AgentsFile {
  writeFileSync(file, json);
  return loadAgents({ file, workspace, stateDir: path.join(root, 'state') });
}

function refusal(json: string, file?: string): string {
  try {
    load(json, file);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).not.toContain('\n');
    return (err as Error).message;
  }
  throw new Error('loaded');
}

describe('agents.json', () => {
  it('without the file there is one agent, main, in the workspace of .env', () => {
    const agents = loadAgents({
      file: path.join(root, 'none.json'),
      workspace,
      stateDir: path.join(root, 'state'),
    });
    expect(agents).toEqual({
      file: undefined,
      agents: [{ id: 'main', workspacePath: workspace }],
      routes: [],
      defaultAgent: 'main',
    });
  });

  it('reads JSON with comments; main is added when not listed; workspaces resolve beside the file', () => {
    const agents = load(`{
      // the work assistant
      "agents": [{ "id": "work", "workspace": "work", "heartbeat": { "interval": "2h" } },],
      "routes": [{ "channel": "slack", "agent": "work" }],
    }`);
    expect(agents.agents.map((a) => a.id)).toEqual(['main', 'work']);
    expect(agents.agents[1]).toMatchObject({
      workspacePath: path.join(root, 'work'),
      heartbeatMs: 7_200_000,
    });
    expect(agents.defaultAgent).toBe('main');
  });

  it.each([
    ['not JSON', '{ "agents": [', /is not valid JSON/],
    [
      'an unknown field',
      '{ "agents": [{ "id": "work", "workspace": "w", "colour": "red" }] }',
      /agents\[0\]: .*colour/,
    ],
    [
      'a bad id',
      '{ "agents": [{ "id": "Work!", "workspace": "w" }] }',
      /agents\[0\]\.id: must be lower-case/,
    ],
    [
      'an id twice',
      '{ "agents": [{ "id": "w", "workspace": "a" }, { "id": "w", "workspace": "b" }] }',
      /agents\[1\]\.id: "w" is listed twice/,
    ],
    [
      'an agent without a workspace',
      '{ "agents": [{ "id": "work" }] }',
      /agents\[0\]\.workspace: agent "work" needs a workspace/,
    ],
    [
      'a bad approval',
      '{ "agents": [{ "id": "w", "workspace": "w", "approval": "maybe" }] }',
      /agents\[0\]\.approval: /,
    ],
    [
      'a bad heartbeat',
      '{ "agents": [{ "id": "w", "workspace": "w", "heartbeat": { "interval": "soon" } }] }',
      /agents\[0\]\.heartbeat\.interval: "soon"/,
    ],
    [
      'a route to nobody',
      '{ "agents": [{ "id": "w", "workspace": "w" }], "routes": [{ "chat": "1", "agent": "x" }] }',
      /routes\[0\]\.agent: "x" is not an agent/,
    ],
    [
      'a route matching everything',
      '{ "agents": [{ "id": "w", "workspace": "w" }], "routes": [{ "agent": "w" }] }',
      /routes\[0\]: a route needs at least one of/,
    ],
    [
      'canAsk naming nobody',
      '{ "agents": [{ "id": "w", "workspace": "w", "canAsk": ["x"] }] }',
      /canAsk names "x"/,
    ],
    [
      'a default that is no agent',
      '{ "agents": [{ "id": "w", "workspace": "w" }], "default": "x" }',
      /default: "x" is not an agent/,
    ],
    [
      'a negative budget',
      '{ "agents": [{ "id": "w", "workspace": "w", "budget": { "daily": -1 } }] }',
      /agents\[0\]\.budget\.daily: /,
    ],
  ])('refuses %s with one line naming the field', (_what, json, pattern) => {
    expect(refusal(json)).toMatch(pattern);
  });

  it('refuses overlapping workspaces, the file inside a workspace, and the state folder inside one', () => {
    expect(refusal('{ "agents": [{ "id": "w", "workspace": "main/inner" }] }')).toMatch(
      /the workspace of agent "w" .* is inside the workspace of agent "main"/,
    );
    expect(refusal('{ "agents": [{ "id": "w", "workspace": ".." }] }')).toMatch(
      /is inside the workspace of agent "w"/,
    );
    expect(
      refusal('{ "agents": [{ "id": "w", "workspace": "w" }] }', path.join(workspace, 'agents.json')),
    ).toMatch(/is inside the workspace of agent "main".*keep it beside .env/);
  });
});

describe('routes', () => {
  const agents = {
    agents: [
      { id: 'main', workspacePath: '/m' },
      { id: 'work', workspacePath: '/w' },
      { id: 'kids', workspacePath: '/k' },
    ],
    routes: [
      { chat: '42', agent: 'kids' },
      { channel: 'telegram', account: 'work', agent: 'work' },
      { channel: 'discord', sender: 'u7', agent: 'work' },
      { channel: 'slack', agent: 'kids' },
    ],
    defaultAgent: 'main',
  };
  const msg = (channel: string, chatId: string, senderId = 's', metadata: Record<string, unknown> = {}) => ({
    channel,
    chatId,
    senderId,
    metadata,
  });

  it('takes the first route whose every field matches, else the default', () => {
    expect(agentFor(msg('telegram-work', '42'), agents)).toBe('kids'); // the chat route is first
    expect(agentFor(msg('telegram-work', '7'), agents)).toBe('work');
    expect(agentFor(msg('telegram', '7'), agents)).toBe('main'); // the default bot is account "default"
    expect(agentFor(msg('discord', '7', 'u7'), agents)).toBe('work');
    expect(agentFor(msg('discord', '7', 'u8'), agents)).toBe('main');
    expect(agentFor(msg('slack', 'C1'), agents)).toBe('kids');
  });

  it('a channel that names the agent (the API) is followed, unless no such agent exists', () => {
    expect(agentFor(msg('api', 'key', 'key', { agent: 'work' }), agents)).toBe('work');
    expect(agentFor(msg('api', 'key', 'key', { agent: 'nobody' }), agents)).toBe('main');
  });

  it('reads an instance name as channel and account', () => {
    expect(channelAccount('telegram-family')).toEqual({ channel: 'telegram', account: 'family' });
    expect(channelAccount('telegram')).toEqual({ channel: 'telegram', account: 'default' });
  });
});

describe("an agent's configuration", () => {
  it('keeps main on .env’s prefix and gives the others their own prefix, state folder, model and limits', () => {
    const base = parseConfig({
      MAGPIE_WORKSPACE: workspace,
      MAGPIE_STATE_DIR: path.join(root, 'state'),
      OPENAI_API_KEY: 'k',
    });
    const work = agentConfig(
      base,
      {
        id: 'work',
        workspacePath: path.join(root, 'work'),
        model: 'big-model',
        fallbackModels: ['small-model'],
        tools: { deny: ['exec'] },
        sandbox: 'full-access',
        approval: 'all',
        heartbeatMs: 0,
        budget: { daily: 1.5, dailyTokens: 1000 },
        canAsk: ['main'],
      },
      {},
    );
    expect(agentPrefix(base.redis.prefix, 'main')).toBe(base.redis.prefix);
    expect(work.redis.prefix).toBe(`${base.redis.prefix}-agent-work`);
    expect(work.workspace).toBe(path.join(root, 'work'));
    expect(work.stateDir).toBe(path.join(root, 'state', 'agents', 'work'));
    expect(work.llm.models.map((m) => m.model)).toEqual(['big-model', 'small-model']);
    expect(work.toolFilter).toEqual({ deny: ['exec'] });
    expect(work.sandbox.mode).toBe('full-access');
    expect(work.tools.execSandbox).toBe('off');
    expect(work.approval.mode).toBe('all');
    expect(work.heartbeat.intervalMs).toBe(0);
    expect(work.budget).toMatchObject({ daily: 1.5, dailyTokens: 1000 });
    expect(work.agent).toMatchObject({ id: 'work', canAsk: ['main'] });
    // .env's configuration is untouched.
    expect(base.redis.prefix).not.toContain('agent');
    expect(base.workspace).toBe(workspace);
  });
});

/**
 * Several agents on one bus through the real stack (fake Bot API → gateway
 * → each agent's bus → worker → fake OpenAI): two agents with their own
 * SOUL.md and MEMORY.md answer the chats routed to them and never see each
 * other's; a route by chat id wins over the account route after it; an
 * agent's tool list follows its allow/deny; ask_agent gets the other's answer
 * in the other's context, without the asker's files; a worker started for
 * one agent takes only that agent's turns; each agent's heartbeat runs once
 * per tick however many workers serve it.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { ConfigError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { roleConfig, telegramEnv } from '../../fakes/config.js';
import {
  type FakeOpenAI,
  lastUserText,
  type RecordedRequest,
  startFakeOpenAI,
} from '../../fakes/openai-server.js';
import { dmUpdate, type FakeTelegram, startFakeTelegram } from '../../fakes/telegram-server.js';
import { waitFor } from '../../fakes/wait-for.js';
import { workspaceWith } from '../../fakes/workspace.js';

const owner = { id: 8101, first_name: 'Owner', username: 'owner' };
const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../dist/cli/bin.js');

/** Which agent a model request is for, by the SOUL.md in its system prompt. */
function agentOf(req: RecordedRequest): 'main' | 'work' | undefined {
  const system = JSON.stringify(req.body.messages?.[0] ?? '');
  if (system.includes('MAIN-SOUL')) return 'main';
  if (system.includes('WORK-SOUL')) return 'work';
  return undefined;
}

const isHeartbeat = (req: RecordedRequest) =>
  JSON.stringify(req.body?.messages ?? []).includes('[heartbeat]');

function responder(req: RecordedRequest) {
  const agent = agentOf(req) ?? 'unknown';
  const messages = req.body.messages as Array<{ role: string; content: unknown }>;
  const last = messages.at(-1);
  const text = lastUserText(req);
  if (isHeartbeat(req)) return { content: 'HEARTBEAT_OK' };
  if (last?.role === 'tool') return { content: `${agent} heard: ${String(last.content).slice(0, 300)}` };
  if (text.includes('ask work:'))
    return {
      toolCalls: [
        {
          name: 'ask_agent',
          arguments: JSON.stringify({ agent: 'work', question: 'read secret.txt please' }),
        },
      ],
    };
  if (text.includes('read secret.txt'))
    return { toolCalls: [{ name: 'read_file', arguments: JSON.stringify({ path: 'secret.txt' }) }] };
  return { content: `${agent} answers: ${text.slice(-60)}` };
}

describe('several agents on one bus', () => {
  let fake: FakeTelegram;
  let openai: FakeOpenAI;
  let root: string;
  let mainWs: string;
  let workWs: string;
  let agentsFile: string;
  const roles: RunningRole[] = [];
  /** The chat routed to main by its id; any other chat goes to work by the account route. */
  const mainChat = { ...owner, id: 8201 };
  const workChat = { ...owner, id: 8202 };

  const texts = (id: number) => fake.sent(id).map((m) => m.text);
  const waitForText = (id: number, pattern: RegExp) =>
    fake
      .waitFor(() => texts(id).some((t) => pattern.test(t)), 20_000)
      .catch((err: unknown) => {
        throw new Error(`${String(err)}; waiting for ${pattern} in ${JSON.stringify(texts(id))}`);
      });

  const config = (prefix: string, extra: Record<string, string> = {}) =>
    roleConfig(
      { workspace: mainWs, openai, prefix },
      {
        ...telegramEnv(fake, '@owner'),
        MAGPIE_AGENTS_CONFIG: agentsFile,
        MAGPIE_STATE_DIR: path.join(root, 'state'),
        ...extra,
      },
    );

  beforeAll(async () => {
    fake = await startFakeTelegram({ token: '881:agents' });
    openai = await startFakeOpenAI({ responder });
    root = mkdtempSync(path.join(os.tmpdir(), 'magpie-agents-'));
    mainWs = workspaceWith(path.join(root, 'main'), 'You are MAIN-SOUL.', 'main-fact: the boat is red.');
    workWs = workspaceWith(
      path.join(root, 'work'),
      'You are WORK-SOUL.',
      'work-fact: the deadline is Friday.',
    );
    writeFileSync(path.join(mainWs, 'secret.txt'), 'TOPSECRET-OF-MAIN');
    agentsFile = path.join(root, 'agents.json');
    writeFileSync(
      agentsFile,
      `{
        // main is .env's agent; work has its own folder and no exec
        "agents": [
          { "id": "main", "canAsk": ["work"], "heartbeat": { "interval": "1s" } },
          { "id": "work", "name": "Work", "workspace": "work", "tools": { "deny": ["exec"] }, "heartbeat": { "interval": "1s" } },
        ],
        "routes": [
          { "chat": "${mainChat.id}", "agent": "main" },
          { "channel": "telegram", "account": "default", "agent": "work" },
        ],
      }`,
    );
  });

  afterAll(async () => {
    for (const role of roles.splice(0)) await role.stop();
    await fake?.close();
    await openai?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("answers each chat with its agent's personality and memory, never the other's; a chat route wins over the account route", async () => {
    const role = await startRole({
      role: 'start',
      config: config(`test-${randomUUID()}`),
      logger: silentLogger(),
    });
    roles.push(role);
    try {
      fake.pushUpdate(dmUpdate(mainChat, 'hello main'));
      fake.pushUpdate(dmUpdate(workChat, 'hello work'));
      await waitForText(mainChat.id, /^main answers: hello main/);
      await waitForText(workChat.id, /^work answers: hello work/);
      const sent = (marker: string) => openai.requests.filter((r) => lastUserText(r).includes(marker));
      const toMain = JSON.stringify(sent('hello main')[0]?.body.messages);
      const toWork = JSON.stringify(sent('hello work')[0]?.body.messages);
      expect(toMain).toContain('main-fact: the boat is red.');
      expect(toMain).not.toContain('WORK-SOUL');
      expect(toMain).not.toContain('deadline is Friday');
      expect(toWork).toContain('work-fact: the deadline is Friday.');
      expect(toWork).not.toContain('MAIN-SOUL');
      expect(toWork).not.toContain('boat is red');
      // Tools follow each agent's allow/deny.
      const tools = (r: RecordedRequest | undefined) =>
        ((r?.body.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name);
      expect(tools(sent('hello work')[0])).not.toContain('exec');
      expect(tools(sent('hello work')[0])).not.toContain('ask_agent');
      expect(tools(sent('hello main')[0])).toContain('ask_agent');

      // ask_agent: work answers in its own workspace, where main's secret does not exist.
      fake.pushUpdate(dmUpdate(mainChat, 'ask work: what does the secret say?'));
      const answer = await waitForText(mainChat.id, /^main heard: /).then(() =>
        texts(mainChat.id).find((t) => t.startsWith('main heard: ')),
      );
      expect(answer).toContain('work answered:');
      expect(answer).toContain('work heard:');
      expect(answer).not.toContain('TOPSECRET');
      const workRead = openai.requests.find(
        (r) => agentOf(r) === 'work' && JSON.stringify(r.body.messages).includes('"role":"tool"'),
      );
      expect(JSON.stringify(workRead?.body.messages)).not.toContain('TOPSECRET');
      expect(JSON.stringify(workRead?.body.messages)).toContain('The assistant \\"main\\" asks you');
    } finally {
      await role.stop();
      roles.splice(roles.indexOf(role), 1);
    }
  }, 60_000);

  it('a worker started with --agent takes only that agent’s turns', async () => {
    const prefix = `test-${randomUUID()}`;
    const gateway = await startRole({ role: 'gateway', config: config(prefix), logger: silentLogger() });
    roles.push(gateway);
    const worker = await startRole({
      role: 'worker',
      config: config(prefix),
      logger: silentLogger(),
      agent: 'work',
    });
    roles.push(worker);
    const mainOnly = { ...owner, id: mainChat.id };
    fake.pushUpdate(dmUpdate(mainOnly, 'for main while only work runs'));
    fake.pushUpdate(dmUpdate(workChat, 'for work while only work runs'));
    await waitForText(workChat.id, /^work answers: for work while only work runs/);
    // main's message was taken by the gateway (published before work's) and waits in main's mailbox.
    expect(gateway.bus.prefix).toBe(prefix);
    expect(await gateway.bus.mailbox(`telegram:${mainChat.id}`).length()).toBe(1);
    expect(openai.requests.some((r) => lastUserText(r).includes('for main while only work runs'))).toBe(
      false,
    );
    await worker.stop();
    await gateway.stop();
    roles.length = 0;
  }, 60_000);

  it("runs each agent's heartbeat once per tick with two workers serving both", async () => {
    writeFileSync(path.join(mainWs, 'HEARTBEAT.md'), '# Tasks\n- look around\n');
    writeFileSync(path.join(workWs, 'HEARTBEAT.md'), '# Tasks\n- look around\n');
    const prefix = `test-${randomUUID()}`;
    const before = openai.requests.length;
    const started = Date.now();
    const workers = [
      await startRole({ role: 'worker', config: config(prefix), logger: silentLogger() }),
      await startRole({ role: 'worker', config: config(prefix), logger: silentLogger() }),
    ];
    roles.push(...workers);
    const beats = (agent: string) =>
      openai.requests.slice(before).filter((r) => isHeartbeat(r) && agentOf(r) === agent).length;
    await waitFor(() => beats('main') >= 3 && beats('work') >= 3, 30_000, 'three heartbeats of each agent');
    for (const w of workers) await w.stop();
    roles.length = 0;
    const seconds = (Date.now() - started) / 1000;
    // One turn per tick and agent: two workers each taking every tick would make about twice as many.
    for (const agent of ['main', 'work']) expect(beats(agent)).toBeLessThanOrEqual(Math.ceil(seconds) + 1);
  }, 60_000);

  it('magpie send --agent work is answered by work; without --agent by main', async () => {
    const prefix = `test-${randomUUID()}`;
    const role = await startRole({ role: 'start', config: config(prefix), logger: silentLogger() });
    roles.push(role);
    const env = {
      PATH: process.env.PATH,
      REDIS_URL: inject('redisUrl'),
      MAGPIE_QUEUE_PREFIX: prefix,
      MAGPIE_WORKSPACE: mainWs,
      MAGPIE_AGENTS_CONFIG: agentsFile,
      MAGPIE_STATE_DIR: path.join(root, 'state'),
    };
    const send = async (...args: string[]) =>
      (
        await promisify(execFile)(process.execPath, [BIN, 'send', '--no-stream', ...args], { cwd: root, env })
      ).stdout.trim();
    expect(await send('--agent', 'work', '-m', 'who answers the cli?')).toBe(
      'work answers: who answers the cli?',
    );
    expect(await send('-m', 'and now?')).toBe('main answers: and now?');
    const refused = await promisify(execFile)(
      process.execPath,
      [BIN, 'send', '--agent', 'nobody', '-m', 'x'],
      { cwd: root, env },
    ).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(refused?.code).toBe(2);
    expect(refused?.stderr.trim()).toBe('magpie: magpie send: --agent nobody: no such agent (main, work)');
    await role.stop();
    roles.length = 0;
  }, 60_000);

  it('a bad agents.json stops start-up with one line naming the field', async () => {
    const bad = path.join(root, 'bad-agents.json');
    writeFileSync(bad, '{ "agents": [ { "id": "work", "workspace": "work", "approval": "sometimes" } ] }');
    const err = await startRole({
      role: 'gateway',
      config: config(`test-${randomUUID()}`, { MAGPIE_AGENTS_CONFIG: bad }),
      logger: silentLogger(),
    }).then(
      async (r) => {
        await r.stop();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/^.*bad-agents\.json: agents\[0\]\.approval: /);
    expect((err as Error).message).not.toContain('\n');
  });
});

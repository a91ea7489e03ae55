/**
 * The dashboard and `/metrics` with two agents (agents.json), through the
 * real stack (fake Bot API → gateway → each agent's bus → worker → fake
 * OpenAI) and the dashboard `magpie start` serves: after a turn for each
 * agent, `?agent=work` shows work's session and turns and not main's (and
 * the default shows main's), the switcher's links keep the agent, an
 * unknown agent is 404, Bull Board lists both agents' queues, `/metrics`
 * counts each agent's turns and tokens under its `agent` label, and none of
 * it answers without the token.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { silentLogger } from '../../../src/log/index.js';
import { roleConfig, telegramEnv } from '../../fakes/config.js';
import {
  type FakeOpenAI,
  lastUserText,
  type RecordedRequest,
  startFakeOpenAI,
} from '../../fakes/openai-server.js';
import { freePort } from '../../fakes/redis-server.js';
import { dmUpdate, type FakeTelegram, startFakeTelegram } from '../../fakes/telegram-server.js';
import { waitFor } from '../../fakes/wait-for.js';

const TOKEN = 'agents-dashboard-token';
const owner = { id: 8301, first_name: 'Owner', username: 'owner' };
/** Routed to main by its id; any other chat goes to work by the account route. */
const mainChat = { ...owner, id: 8311 };
const workChat = { ...owner, id: 8312 };

/** Which agent a model request is for, by the SOUL.md in its system prompt. */
function agentOf(req: RecordedRequest): 'main' | 'work' {
  return JSON.stringify(req.body.messages?.[0] ?? '').includes('WORK-SOUL') ? 'work' : 'main';
}

/** Each agent's answers report different token counts, so `/metrics` shows whose is whose. */
function responder(req: RecordedRequest) {
  const agent = agentOf(req);
  return {
    content: `${agent} answers: ${lastUserText(req).slice(-40)}`,
    usage:
      agent === 'work'
        ? { prompt_tokens: 200, completion_tokens: 20 }
        : { prompt_tokens: 100, completion_tokens: 10 },
  };
}

function workspaceWith(dir: string, soul: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'SOUL.md'), `# Soul\n\n${soul}\n`);
  return dir;
}

interface Overview {
  status: { prefix: string; usage: { sessions: Array<{ session: string }> } };
  turns: Array<{ session: string }>;
}

describe('the dashboard and /metrics per agent', () => {
  let fake: FakeTelegram;
  let openai: FakeOpenAI;
  let root: string;
  let role: RunningRole | undefined;
  let base: string;
  const prefix = `test-${randomUUID()}`;

  const get = (url: string, token: string | null = TOKEN) =>
    fetch(new URL(url, base), {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      redirect: 'manual',
    });
  const json = async <T>(url: string): Promise<T> => {
    const res = await get(url);
    expect(res.status, url).toBe(200);
    return (await res.json()) as T;
  };
  const metricValue = (text: string, sample: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
    return line === undefined ? undefined : Number(line.slice(sample.length + 1));
  };

  beforeAll(async () => {
    fake = await startFakeTelegram({ token: '883:agents-dashboard' });
    openai = await startFakeOpenAI({ responder });
    root = mkdtempSync(path.join(os.tmpdir(), 'magpie-agents-dash-'));
    const mainWs = workspaceWith(path.join(root, 'main'), 'You are MAIN-SOUL.');
    workspaceWith(path.join(root, 'work'), 'You are WORK-SOUL.');
    // Beside the workspaces, never inside one.
    const agentsFile = path.join(root, 'agents.json');
    writeFileSync(
      agentsFile,
      JSON.stringify({
        agents: [{ id: 'main' }, { id: 'work', name: 'Work', workspace: 'work' }],
        routes: [
          { chat: String(mainChat.id), agent: 'main' },
          { channel: 'telegram', account: 'default', agent: 'work' },
        ],
      }),
    );
    const port = await freePort();
    role = await startRole({
      role: 'start',
      config: roleConfig(
        { workspace: mainWs, openai, prefix },
        {
          ...telegramEnv(fake, '@owner'),
          MAGPIE_AGENTS_CONFIG: agentsFile,
          MAGPIE_STATE_DIR: path.join(root, 'state'),
          MAGPIE_DASHBOARD_PORT: String(port),
          MAGPIE_DASHBOARD_TOKEN: TOKEN,
        },
      ),
      logger: silentLogger(),
    });
    base = `http://127.0.0.1:${port}/`;
    fake.pushUpdate(dmUpdate(mainChat, 'hello main'));
    fake.pushUpdate(dmUpdate(workChat, 'hello work'));
    const answered = (id: number, text: string) =>
      fake.waitFor(() => fake.sent(id).some((m) => m.text?.startsWith(text)), 20_000);
    await answered(mainChat.id, 'main answers: hello main');
    await answered(workChat.id, 'work answers: hello work');
    // The answer is sent before the worker records the turn's figures.
    await waitFor(
      async () => {
        const text = await (await get('/metrics')).text();
        return (
          metricValue(text, 'magpie_turns_total{agent="main",outcome="ok"}') === 1 &&
          metricValue(text, 'magpie_turns_total{agent="work",outcome="ok"}') === 1
        );
      },
      10_000,
      "each agent's turn counted",
    );
  }, 60_000);

  afterAll(async () => {
    await role?.stop();
    await fake?.close();
    await openai?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("shows work's session and turns on ?agent=work and main's without it, never the other's", async () => {
    const work = await json<Overview>('/api/overview?agent=work');
    expect(work.status.prefix).toBe(`${prefix}-agent-work`);
    expect(work.turns.map((t) => t.session)).toEqual([`telegram:${workChat.id}`]);
    expect(work.status.usage.sessions.map((s) => s.session)).toEqual([`telegram:${workChat.id}`]);

    const main = await json<Overview>('/api/overview');
    expect(main.status.prefix).toBe(prefix);
    expect(main.turns.map((t) => t.session)).toEqual([`telegram:${mainChat.id}`]);
    expect(main.status.usage.sessions.map((s) => s.session)).toEqual([`telegram:${mainChat.id}`]);
    expect(await json<Overview>('/api/overview?agent=main')).toMatchObject({ turns: main.turns });

    const sessions = await (await get('/sessions?agent=work')).text();
    expect(sessions).toContain(`telegram:${workChat.id}`);
    expect(sessions).not.toContain(`telegram:${mainChat.id}`);
    // The transcript link and the header's links keep the agent.
    expect(sessions).toContain(
      `href="/sessions/${encodeURIComponent(`telegram:${workChat.id}`)}?agent=work"`,
    );
    expect(sessions).toContain('<a href="/usage?agent=work">Usage</a>');
    const transcript = await (await get(`/sessions/telegram:${workChat.id}?agent=work`)).text();
    expect(transcript).toContain('work answers: hello work');
    expect(await (await get(`/sessions/telegram:${workChat.id}`)).text()).not.toContain('work answers');
  });

  it('offers a switcher between the agents on every page, the one shown marked', async () => {
    for (const where of ['/', '/usage', '/sessions']) {
      const html = await (await get(`${where}?agent=work`)).text();
      expect(html).toContain(`<a href="${where}?agent=main">main</a>`);
      expect(html).toContain(
        `<a href="${where}?agent=work" class="current" aria-current="page">Work (work)</a>`,
      );
    }
  });

  it('answers an unknown agent, or two at once, with 404 and serves nothing of any agent', async () => {
    for (const url of ['/?agent=nobody', '/sessions?agent=nobody', '/usage?agent=Work']) {
      const res = await get(url);
      expect(res.status, url).toBe(404);
      expect(await res.text()).toContain('no agent');
    }
    const twice = await get('/api/overview?agent=work&agent=main');
    expect(twice.status).toBe(404);
    expect(await twice.text()).not.toContain('telegram:');
    expect((await get('/api/usage?agent=%3Cscript%3E')).status).toBe(404);
    const hostile = await (await get('/?agent=%3Cscript%3Ealert(1)%3C/script%3E')).text();
    expect(hostile).not.toContain('<script>alert');
  });

  it("counts each agent's turns and tokens under its own agent label in /metrics", async () => {
    const text = await (await get('/metrics')).text();
    expect(metricValue(text, 'magpie_turns_total{agent="main",outcome="ok"}')).toBe(1);
    expect(metricValue(text, 'magpie_turns_total{agent="work",outcome="ok"}')).toBe(1);
    expect(metricValue(text, 'magpie_llm_prompt_tokens_total{agent="main"}')).toBe(100);
    expect(metricValue(text, 'magpie_llm_prompt_tokens_total{agent="work"}')).toBe(200);
    expect(metricValue(text, 'magpie_llm_tokens_total{agent="work",kind="completion"}')).toBe(20);
    expect(metricValue(text, 'magpie_turn_duration_seconds_count{agent="work"}')).toBe(1);
    expect(metricValue(text, 'magpie_workers_alive{agent="main"}')).toBe(1);
    expect(metricValue(text, 'magpie_workers_alive{agent="work"}')).toBe(1);
    // Every sample of a magpie metric names its agent.
    const samples = text.split('\n').filter((l) => l.startsWith('magpie_'));
    expect(samples.length).toBeGreaterThan(20);
    for (const line of samples) expect(line).toMatch(/^magpie_[a-z_]+\{agent="(main|work)"/);
  });

  it("lists both agents' queues on Bull Board, work's under its name", async () => {
    const board = await json<{ queues: Array<{ name: string }> }>('/queues/api/queues');
    const names = board.queues.map((q) => q.name);
    expect(names).toContain('inbound');
    expect(names).toContain('work:inbound');
  });

  it('still wants the token for every agent and for /metrics', async () => {
    for (const url of [
      '/metrics',
      '/api/overview?agent=work',
      '/sessions?agent=work',
      '/queues/api/queues',
    ]) {
      expect((await get(url, null)).status, url).toBe(401);
      expect((await get(url, 'wrong-token')).status, url).toBe(401);
    }
  });
});

/**
 * Prompt caching through the daemon (`magpie start` on real Redis, the fake
 * OpenAI server): every request of a chat begins with the bytes of the one
 * before it — across turns, a tool call and a memory write by someone else —
 * while the new memory reaches the model; the cached tokens the endpoint
 * reports show in `magpie status --json` and in the chat's /status.
 */
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { StatusReport } from '../../src/ops/status.js';
import { stopProcsThenFake } from '../fakes/daemon.js';
import { commonPrefix, type FakeOpenAI, lastUserText, startFakeOpenAI } from '../fakes/openai-server.js';
import { build, daemonEnv, magpie, type Proc, tempWorkspace } from './daemon-helpers.js';

const CHAT = 'cache-e2e';

describe('prompt caching through the daemon', () => {
  let fake: FakeOpenAI;
  let env: NodeJS.ProcessEnv;
  let workspace: string;
  let daemon: Proc | undefined;
  /** Cached tokens the fake reported for this chat's requests, in total. */
  let reportedCached = 0;
  const bodies: string[] = [];

  beforeAll(async () => {
    build();
    fake = await startFakeOpenAI({
      responder: (req) => {
        const mine = JSON.stringify(req.body.messages[0]).includes(`Session: cli:${CHAT}`);
        const previous = bodies.at(-1);
        const cached = mine && previous ? Math.floor(commonPrefix(previous, req.raw) / 4) : 0;
        if (mine) {
          bodies.push(req.raw);
          reportedCached += cached;
        }
        const usage = {
          prompt_tokens: Math.ceil(req.raw.length / 4),
          completion_tokens: 20,
          prompt_tokens_details: { cached_tokens: cached },
        };
        const last = req.body.messages.at(-1);
        if (lastUserText(req).includes('read the soul') && last.role === 'user') {
          return { toolCalls: [{ name: 'read_file', arguments: '{"path":"SOUL.md"}' }], usage };
        }
        return { content: `answer ${bodies.length}: ${'words '.repeat(200)}`, usage };
      },
    });
    workspace = tempWorkspace();
    env = daemonEnv({
      REDIS_URL: inject('redisUrl'),
      OPENAI_BASE_URL: fake.baseURL,
      MAGPIE_WORKSPACE: workspace,
      MAGPIE_TIMEZONE: 'Europe/Lisbon',
      MAGPIE_PRICE_INPUT: '2',
      MAGPIE_PRICE_CACHED_INPUT: '0.5',
      MAGPIE_PRICE_OUTPUT: '8',
    });
    daemon = magpie(['start'], env);
    await daemon.waitFor(/magpie is running/, 20_000);
  }, 120_000);

  afterAll(() => stopProcsThenFake([daemon], fake));

  async function send(text: string): Promise<string> {
    const proc = magpie(['send', '-m', text, '--chat', CHAT, '--timeout', '20s'], env);
    expect(await proc.exited).toBe(0);
    return proc.stdout().trim();
  }

  it('sends each request of the chat as the previous one plus what came after; new memory rides at the end', async () => {
    await send('hello there');
    await send('please read the soul file');
    // Another chat (or the user, by hand) writes to long-term memory between turns.
    appendFileSync(path.join(workspace, 'memory', 'MEMORY.md'), '\n- The user is learning Portuguese.\n');
    await send('what do you know about me?');
    await send('thanks');

    expect(bodies.length).toBeGreaterThanOrEqual(5); // four turns, one of them with a tool call
    for (let i = 1; i < bodies.length; i += 1) {
      const [before, after] = [bodies[i - 1]!, bodies[i]!];
      // The previous body without its closing `]}` (the messages array, the body) is where this one begins.
      expect(after.startsWith(before.slice(0, -2)), `request ${i + 1} extends request ${i}`).toBe(true);
    }
    const afterWrite = fake.requests.find((r) => lastUserText(r) === 'what do you know about me?')!;
    const sent = JSON.stringify(afterWrite.body.messages.at(-1));
    expect(sent).toContain('memory/MEMORY.md (added)');
    expect(sent).toContain('The user is learning Portuguese.');
    expect(JSON.stringify(afterWrite.body.messages[0])).not.toContain('Portuguese');
  }, 90_000);

  it('shows the cached tokens the endpoint reported in magpie status --json and in the chat’s /status', async () => {
    expect(reportedCached).toBeGreaterThan(0);
    const proc = magpie(['status', '--json'], env);
    expect(await proc.exited).toBe(0);
    const report = JSON.parse(proc.stdout()) as StatusReport;
    const session = report.usage.sessions.find((s) => s.session === `cli:${CHAT}`);
    expect(session?.today.cachedTokens).toBe(reportedCached);
    expect(session?.today.turns).toBe(4);
    expect(report.usage.today.cachedTokens).toBe(reportedCached);
    expect(report.usage.today.cost).toBeGreaterThan(0);
    expect(report.usage.prices).toEqual({ input: 2, cachedInput: 0.5, output: 8 });

    const status = await send('/status');
    expect(status).toContain(`(${reportedCached.toLocaleString('en-US')} cached)`);
    expect(status).toMatch(/cost ≈ \d/);
  }, 30_000);
});

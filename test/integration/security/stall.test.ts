/**
 * No single hostile input stalls the other chats: the role `magpie start` runs
 * (fake Telegram → real bus, turn worker, agent and tools → fake OpenAI), one
 * hostile input per case from the security report, and another chat (B) must
 * get its answer within 2 s of sending while the hostile work runs. The parsers
 * themselves are timed in test/unit/security/adversarial-inputs.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { repeatTo } from '../../fakes/adversarial.js';
import { roleConfig, telegramEnv } from '../../fakes/config.js';
import { capturingLogger } from '../../fakes/logger.js';
import {
  type FakeOpenAI,
  lastUserText,
  type RecordedRequest,
  startFakeOpenAI,
} from '../../fakes/openai-server.js';
import { stopRoleAndFakes } from '../../fakes/role.js';
import { dmUpdate, type FakeTelegram, startFakeTelegram } from '../../fakes/telegram-server.js';

const owner = { id: 7001, first_name: 'Owner', username: 'owner' };
const WITHIN_MS = 2_000;
const HOSTILE_PAGE = repeatTo('<!--', 330 * 1024);
const HOSTILE_COMMAND = repeatTo('a(){', 120 * 1024);

let fake: FakeTelegram;
let openai: FakeOpenAI;
let page: Server;
let pageUrl: string;
let pageRequested: () => void = () => {};
let role: RunningRole | undefined;
let workspace: string;
const log = capturingLogger();

/** The last message the model was sent, when it is a tool result. */
function toolResult(req: RecordedRequest): string | undefined {
  const last = (req.body.messages as Array<{ role: string; content: unknown }>).at(-1);
  return last?.role === 'tool' ? String(last.content) : undefined;
}

beforeAll(async () => {
  page = createServer((_req, res) => {
    pageRequested();
    res.writeHead(200, { 'content-type': 'text/html' }).end(HOSTILE_PAGE);
  });
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/hostile.html`;
  fake = await startFakeTelegram({ token: '778:stall-token' });
  openai = await startFakeOpenAI({
    responder: (req) => {
      const result = toolResult(req);
      if (result !== undefined) return { content: `tool said: ${result.slice(0, 200)}` };
      const text = lastUserText(req);
      if (text.includes('fetch the page')) {
        return { toolCalls: [{ name: 'web_fetch', arguments: JSON.stringify({ url: pageUrl }) }] };
      }
      if (text.includes('run the command')) {
        return { toolCalls: [{ name: 'exec', arguments: JSON.stringify({ command: HOSTILE_COMMAND }) }] };
      }
      return { content: `echo: ${text.slice(-40)}` };
    },
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-stall-'));
  const config = roleConfig(
    { workspace, openai, prefix: `test-${randomUUID()}` },
    {
      ...telegramEnv(fake, `@${owner.username}`),
      MAGPIE_WEB_ALLOW_PRIVATE: 'true',
      MAGPIE_EXEC_SANDBOX: 'off',
      // The hostile command must reach the deny list, not wait for a person.
      MAGPIE_APPROVAL: 'off',
    },
  );
  role = await startRole({ role: 'start', config, logger: log.logger, concurrency: 4 });
}, 60_000);

afterAll(async () => {
  await stopRoleAndFakes(role, [fake, openai], workspace);
  await new Promise((resolve) => page?.close(resolve));
});

let nextChat = 7100;

/** A fresh chat of the owner's. */
function newChat() {
  nextChat += 1;
  return { ...owner, id: nextChat };
}

/** Sends `text` in `chat` and waits for its reply; returns the reply and how long it took (ms). */
async function ask(chat: { id: number }, text: string, timeoutMs = 20_000) {
  const start = performance.now();
  fake.pushUpdate(dmUpdate({ ...owner, id: chat.id }, text));
  // A slow tool first shows a progress line ("⏳ fetching …") that the reply replaces in place.
  const answered = () => fake.sent(chat.id).find((m) => !m.text.startsWith('⏳'));
  await fake.waitFor(() => answered() !== undefined, timeoutMs);
  return { reply: answered()!.text, ms: performance.now() - start };
}

/** Chat B's plain message is answered within 2 s of sending. */
async function expectBAnsweredInTime(label: string): Promise<number> {
  const b = newChat();
  const { reply, ms } = await ask(b, `hello from B (${label})`, WITHIN_MS + 3_000);
  expect(reply).toContain(`B (${label})`);
  console.log(`stall: ${label}: B answered in ${Math.round(ms)} ms`);
  expect(ms).toBeLessThan(WITHIN_MS);
  return ms;
}

describe('one hostile input does not stall the other chats', () => {
  it('answers B while chat A web_fetches a page of 330 KB of "<!--"', async () => {
    await ask(newChat(), 'warm up'); // the first turn starts things up; the cases time the ones after
    const a = newChat();
    const requested = new Promise<void>((resolve) => {
      pageRequested = resolve;
    });
    const aDone = ask(a, 'please fetch the page');
    await requested; // A's web_fetch is under way
    await expectBAnsweredInTime('web_fetch');
    const { reply } = await aDone;
    expect(reply).toContain('tool said: Fetched'); // the page was read, not refused
    expect(reply).toContain('status 200');
  });

  it('answers B with a MEMORY.md of "<!--" × 75,000 read into the prompt', async () => {
    mkdirSync(path.join(workspace, 'memory'), { recursive: true });
    writeFileSync(path.join(workspace, 'memory', 'MEMORY.md'), '<!--'.repeat(75_000));
    try {
      await expectBAnsweredInTime('MEMORY.md');
    } finally {
      rmSync(path.join(workspace, 'memory', 'MEMORY.md'), { force: true });
    }
  });

  it('answers B with a SKILL.md whose front matter has a line of 150,000 spaces, and reports the skill', async () => {
    const dir = path.join(workspace, 'skills', 'x');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      path.join(dir, 'SKILL.md'),
      `---\nname: x\ndescription: d\n${' '.repeat(150_000)}\n---\nbody of x\n`,
    );
    const before = openai.requests.length;
    try {
      await expectBAnsweredInTime('SKILL.md');
    } finally {
      rmSync(path.join(workspace, 'skills'), { recursive: true, force: true });
    }
    const reported = log.lines.filter((l) => l.msg === 'skills: malformed skill skipped') as Array<{
      reason?: string;
    }>;
    expect(reported.map((l) => l.reason)).toContainEqual(expect.stringContaining('longer than 16 KiB'));
    const prompt = JSON.stringify(openai.requests.slice(before).map((r) => r.body.messages));
    expect(prompt).not.toContain('body of x');
  });

  it('answers B while chat A execs a 120 KB "a(){" command, which is refused as too long', async () => {
    const a = newChat();
    const before = openai.requests.length;
    const aDone = ask(a, 'please run the command');
    await openai.waitForRequests(before + 1, 10_000); // A's model call that asks for exec
    await expectBAnsweredInTime('exec');
    const { reply, ms } = await aDone;
    expect(reply).toContain('longer than 64 KiB');
    expect(ms).toBeLessThan(10_000);
  });
});

/**
 * Two assistants on two Telegram bots (named accounts, each a fake Bot API
 * behind one API root), routed by account in agents.json: the same person
 * writes to both bots; each bot answers with its own agent's SOUL.md and
 * MEMORY.md, through itself only, and neither agent's model request carries
 * the other's personality, memory or conversation. A route by chat id placed
 * before the account routes sends one chat of the family bot to work.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { silentLogger } from '../../../src/log/index.js';
import { roleConfig } from '../../fakes/config.js';
import {
  type FakeOpenAI,
  lastUserText,
  type RecordedRequest,
  startFakeOpenAI,
} from '../../fakes/openai-server.js';
import { dmUpdate, type FakeTelegram, startFakeTelegram } from '../../fakes/telegram-server.js';
import { startTokenRouter, type TokenRouter } from '../../fakes/token-router.js';
import { workspaceWith } from '../../fakes/workspace.js';

const TOKENS = { family: '401:family-bot-token-x1', work: '402:work-bot-token-y2' };
const owner = { id: 9001, first_name: 'Owner', username: 'owner' };

function soulOf(req: RecordedRequest): string {
  const system = JSON.stringify(req.body.messages?.[0] ?? '');
  return system.includes('FAMILY-SOUL') ? 'family' : system.includes('WORK-SOUL') ? 'work' : 'unknown';
}

describe('two assistants on two bots', () => {
  let family: FakeTelegram;
  let work: FakeTelegram;
  let router: TokenRouter;
  let openai: FakeOpenAI;
  let root: string;
  let role: RunningRole | undefined;
  const routedChat = { ...owner, id: 9002 };

  beforeAll(async () => {
    family = await startFakeTelegram({ token: TOKENS.family, botUsername: 'family_bot' });
    work = await startFakeTelegram({ token: TOKENS.work, botUsername: 'work_bot' });
    router = await startTokenRouter({ [TOKENS.family]: family.apiRoot, [TOKENS.work]: work.apiRoot });
    openai = await startFakeOpenAI({
      responder: (req) => ({ content: `${soulOf(req)} says: ${lastUserText(req).slice(-50)}` }),
    });
    root = mkdtempSync(path.join(os.tmpdir(), 'magpie-two-bots-'));
    const mainWs = workspaceWith(
      path.join(root, 'family'),
      'You are FAMILY-SOUL.',
      'family-fact: dinner at seven.',
    );
    workspaceWith(path.join(root, 'work'), 'You are WORK-SOUL.', 'work-fact: the server is in Oslo.');
    const agentsFile = path.join(root, 'agents.json');
    writeFileSync(
      agentsFile,
      JSON.stringify({
        agents: [
          { id: 'main', name: 'Family' },
          { id: 'work', name: 'Work', workspace: 'work' },
        ],
        routes: [
          { chat: String(routedChat.id), agent: 'work' },
          { channel: 'telegram', account: 'family', agent: 'main' },
          { channel: 'telegram', account: 'work', agent: 'work' },
        ],
      }),
    );
    const config = roleConfig(
      { workspace: mainWs, openai, prefix: `test-${randomUUID()}` },
      {
        TELEGRAM_ACCOUNTS: `family=${TOKENS.family},work=${TOKENS.work}`,
        TELEGRAM_API_ROOT: router.root,
        TELEGRAM_ALLOW_FROM: '@owner',
        MAGPIE_AGENTS_CONFIG: agentsFile,
        MAGPIE_STATE_DIR: path.join(root, 'state'),
      },
    );
    role = await startRole({ role: 'start', config, logger: silentLogger() });
  }, 60_000);

  afterAll(async () => {
    await role?.stop();
    for (const f of [family, work]) await f?.close();
    await router?.close();
    await openai?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('each bot answers with its own agent, never seeing the other’s personality, memory or conversation', async () => {
    family.pushUpdate(dmUpdate(owner, 'what is for dinner?'));
    await family.waitFor(() => family.sent(owner.id).length >= 1, 20_000);
    work.pushUpdate(dmUpdate(owner, 'where is the server?'));
    await work.waitFor(() => work.sent(owner.id).length >= 1, 20_000);
    expect(family.sent(owner.id).map((m) => m.text)).toEqual(['family says: what is for dinner?']);
    expect(work.sent(owner.id).map((m) => m.text)).toEqual(['work says: where is the server?']);
    const request = (marker: string) =>
      JSON.stringify(openai.requests.find((r) => lastUserText(r).includes(marker))?.body.messages);
    const toFamily = request('what is for dinner?');
    const toWork = request('where is the server?');
    expect(toFamily).toContain('dinner at seven');
    expect(toFamily).not.toMatch(/WORK-SOUL|Oslo|where is the server/);
    expect(toWork).toContain('server is in Oslo');
    expect(toWork).not.toMatch(/FAMILY-SOUL|dinner at seven|what is for dinner/);
  });

  it('a route by chat id, listed first, wins over the account route', async () => {
    family.pushUpdate(dmUpdate(routedChat, 'routed by chat'));
    await family.waitFor(() => family.sent(routedChat.id).length >= 1, 20_000);
    // Through the bot it came from, answered by the agent the chat route names.
    expect(family.sent(routedChat.id).map((m) => m.text)).toEqual(['work says: routed by chat']);
    expect(work.sent(routedChat.id)).toEqual([]);
  });
});

/**
 * Several Discord bots in one gateway, without the default bot: two named
 * accounts (DISCORD_ACCOUNTS=family=…,work=…), each a fake Discord of its own
 * (REST behind one shared API root, test/fakes/token-router.ts; each its own
 * gateway connection), through the real adapter, Bus (Redis), turn worker and
 * agent. Each bot is the channel instance `discord-family` / `discord-work`:
 * its own channel name and session, and replies through itself only.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { silentLogger } from '../../../src/log/index.js';
import { sessionFileName } from '../../../src/sessions/session-key.js';
import { roleConfig } from '../../fakes/config.js';
import { type FakeDiscord, type FakeUser, startFakeDiscord } from '../../fakes/discord-server.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { stopRoleAndFakes } from '../../fakes/role.js';
import { startTokenRouter, type TokenRouter } from '../../fakes/token-router.js';

const TOKENS = { family: 'family-SECRET-discord-d4', work: 'work-SECRET-discord-e5' };

let family: FakeDiscord;
let work: FakeDiscord;
let router: TokenRouter;
let openai: FakeOpenAI;
let role: RunningRole | undefined;
let workspace: string;
let owner: FakeUser;

/** Every content a fake bot posted or edited into a channel (previews included). */
function everythingSent(fake: FakeDiscord, channelId: string): string[] {
  return fake.calls
    .filter((c) => c.path.startsWith(`/channels/${channelId}/messages`) && c.method !== 'DELETE')
    .map((c) => String((c.body as { content?: unknown } | undefined)?.content ?? ''));
}

beforeAll(async () => {
  family = await startFakeDiscord({ token: TOKENS.family, botUsername: 'family_bot' });
  work = await startFakeDiscord({ token: TOKENS.work, botUsername: 'work_bot' });
  const rootOf = (fake: FakeDiscord) => fake.apiRoot.replace(/\/api$/, '');
  router = await startTokenRouter({ [TOKENS.family]: rootOf(family), [TOKENS.work]: rootOf(work) });
  owner = { id: family.newId(), username: 'owner', global_name: 'Owner' };
  openai = await startFakeOpenAI({
    responder: (req) => ({ content: `echo: ${lastUserText(req).slice(-40)}` }),
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-discord-accounts-'));
  const config = roleConfig(
    { workspace, openai, prefix: `test-${randomUUID()}` },
    {
      DISCORD_ACCOUNTS: `family=${TOKENS.family},work=${TOKENS.work}`,
      DISCORD_API_ROOT: `${router.root}/api`,
      DISCORD_ALLOW_FROM: owner.id,
    },
  );
  role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 4 });
}, 60_000);

afterAll(() => stopRoleAndFakes(role, [family, work, router, openai], workspace));

describe('several Discord bots in one gateway', () => {
  it('logs every bot in on its own gateway connection, with its own token', () => {
    expect(family.identifies()).toBe(1);
    expect(work.identifies()).toBe(1);
  });

  it('publishes each bot’s message on its own channel and session, and answers through that bot only', async () => {
    // One channel id seen by both bots (as a server channel both are in would be).
    const chat = family.newId();
    family.dispatchMessage({ channelId: chat, author: owner, content: 'hello family' });
    work.dispatchMessage({ channelId: chat, author: owner, content: 'hello work' });
    await family.waitFor(() => family.shown(chat).some((c) => c.includes('hello family')), 20_000);
    await work.waitFor(() => work.shown(chat).some((c) => c.includes('hello work')), 20_000);
    expect(family.shown(chat)).toEqual(['echo: hello family']);
    expect(work.shown(chat)).toEqual(['echo: hello work']);
    expect(everythingSent(family, chat).join('\n')).not.toContain('work');
    expect(everythingSent(work, chat).join('\n')).not.toContain('family');
    const sessions = path.join(workspace, 'sessions');
    expect(existsSync(path.join(sessions, `${sessionFileName(`discord-family:${chat}`)}.jsonl`))).toBe(true);
    expect(existsSync(path.join(sessions, `${sessionFileName(`discord-work:${chat}`)}.jsonl`))).toBe(true);
    expect(existsSync(path.join(sessions, `${sessionFileName(`discord:${chat}`)}.jsonl`))).toBe(false);

    // The next message to one bot sees its own conversation only.
    const before = openai.requests.length;
    work.dispatchMessage({ channelId: chat, author: owner, content: 'again work' });
    await work.waitFor(() => work.shown(chat).some((c) => c.includes('again work')), 20_000);
    const request = openai.requests.slice(before).find((r) => lastUserText(r).includes('again work'));
    expect(request).toBeDefined();
    const history = JSON.stringify(request!.body.messages);
    expect(history).toContain('hello work');
    expect(history).not.toContain('hello family');
  });

  it('answers one message seen by both bots (the same message id) once through each', async () => {
    const chat = family.newId();
    const id = family.newId();
    family.dispatchMessage({ id, channelId: chat, author: owner, content: 'to you both' });
    work.dispatchMessage({ id, channelId: chat, author: owner, content: 'to you both' });
    await family.waitFor(() => family.shown(chat).some((c) => c.includes('to you both')), 20_000);
    await work.waitFor(() => work.shown(chat).some((c) => c.includes('to you both')), 20_000);
    expect(family.shown(chat)).toEqual(['echo: to you both']);
    expect(work.shown(chat)).toEqual(['echo: to you both']);
  });
});

/**
 * Several Telegram bots in one gateway: the default bot (TELEGRAM_BOT_TOKEN)
 * and two named accounts (TELEGRAM_ACCOUNTS=family=…,work=…), each a fake
 * Bot API of its own behind one shared API root (test/fakes/token-router.ts),
 * through the real adapter, Bus (Redis), turn worker and agent. Each bot is
 * the channel instance `telegram`, `telegram-family`, `telegram-work`: its own
 * channel name, session, pairing list, and replies through itself only.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { approvePairing, listPairingRequests } from '../../../src/bus/pairing-store.js';
import { secretValues } from '../../../src/config/secrets.js';
import { createLogger, type Logger } from '../../../src/log/index.js';
import { sessionFileName } from '../../../src/sessions/session-key.js';
import { roleConfig } from '../../fakes/config.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { stopRoleAndFakes } from '../../fakes/role.js';
import { dmUpdate, type FakeTelegram, startFakeTelegram } from '../../fakes/telegram-server.js';
import { startTokenRouter, type TokenRouter } from '../../fakes/token-router.js';

const TOKENS = {
  main: '303:main-SECRET-token-a1',
  family: '101:family-SECRET-token-b2',
  work: '202:work-SECRET-token-c3',
};

let main: FakeTelegram;
let family: FakeTelegram;
let work: FakeTelegram;
let router: TokenRouter;
let openai: FakeOpenAI;
let role: RunningRole | undefined;
let redis: Redis;
let workspace: string;
let prefix: string;
let logger: Logger;
const logLines: string[] = [];
const owner = { id: 5001, first_name: 'Owner', username: 'owner' };

/** Every text a fake bot sent or edited into a chat (previews included). */
function everythingSent(fake: FakeTelegram, chatId: number): string[] {
  return fake.calls
    .filter(
      (c) =>
        ['sendMessage', 'editMessageText'].includes(c.method) && String(c.params.chat_id) === String(chatId),
    )
    .map((c) => String(c.params.text));
}

function sessionFile(key: string): string {
  return path.join(workspace, 'sessions', `${sessionFileName(key)}.jsonl`);
}

beforeAll(async () => {
  main = await startFakeTelegram({ token: TOKENS.main, botUsername: 'main_bot' });
  family = await startFakeTelegram({ token: TOKENS.family, botUsername: 'family_bot' });
  work = await startFakeTelegram({ token: TOKENS.work, botUsername: 'work_bot' });
  router = await startTokenRouter({
    [TOKENS.main]: main.apiRoot,
    [TOKENS.family]: family.apiRoot,
    [TOKENS.work]: work.apiRoot,
  });
  openai = await startFakeOpenAI({
    responder: (req) => {
      const text = lastUserText(req);
      if (text.includes('slowly'))
        return { content: 'a slow answer, written in pieces', pieces: 4, pieceDelayMs: 700 };
      return { content: `echo: ${text.slice(-40)}` };
    },
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-telegram-accounts-'));
  prefix = `test-${randomUUID()}`;
  redis = new Redis(inject('redisUrl'));
  const config = roleConfig(
    { workspace, openai, prefix },
    {
      TELEGRAM_BOT_TOKEN: TOKENS.main,
      TELEGRAM_ACCOUNTS: `family=${TOKENS.family}, work=${TOKENS.work}`,
      TELEGRAM_API_ROOT: router.root,
      TELEGRAM_ALLOW_FROM: `@${owner.username}`,
    },
  );
  const destination = new Writable({
    write(chunk, _enc, done) {
      logLines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  logger = createLogger({ level: 'debug', destination, secrets: secretValues(config) });
  role = await startRole({ role: 'start', config, logger, concurrency: 4 });
}, 60_000);

afterAll(async () => {
  await redis?.quit();
  await stopRoleAndFakes(role, [main, family, work, router, openai], workspace);
});

describe('several Telegram bots in one gateway', () => {
  it('checks and registers commands for every bot, each with its own token', () => {
    for (const fake of [main, family, work]) {
      expect(fake.calls.some((c) => c.method === 'getMe')).toBe(true);
      expect(fake.calls.some((c) => c.method === 'setMyCommands')).toBe(true);
      expect(fake.calls.some((c) => c.method === 'getUpdates')).toBe(true);
    }
  });

  it('publishes each bot’s message on its own channel and session, and answers through that bot only', async () => {
    main.pushUpdate(dmUpdate(owner, 'hello main'));
    family.pushUpdate(dmUpdate(owner, 'hello family'));
    work.pushUpdate(dmUpdate(owner, 'hello work'));
    for (const [fake, word] of [
      [main, 'main'],
      [family, 'family'],
      [work, 'work'],
    ] as const) {
      await fake.waitFor(() => fake.shown(owner.id).some((t) => t.includes(`hello ${word}`)), 20_000);
    }
    expect(main.shown(owner.id)).toEqual(['echo: hello main']);
    expect(family.shown(owner.id)).toEqual(['echo: hello family']);
    expect(work.shown(owner.id)).toEqual(['echo: hello work']);
    // Never through another bot, not even as a preview.
    expect(everythingSent(main, owner.id).join('\n')).not.toMatch(/family|work/);
    expect(everythingSent(family, owner.id).join('\n')).not.toMatch(/main|work/);
    expect(everythingSent(work, owner.id).join('\n')).not.toMatch(/main|family/);
    // One chat id, three conversations: `<instance>:<chatId>`.
    expect(existsSync(sessionFile('telegram:5001'))).toBe(true);
    expect(existsSync(sessionFile('telegram-family:5001'))).toBe(true);
    expect(existsSync(sessionFile('telegram-work:5001'))).toBe(true);
  });

  it('keeps one person’s conversations with two bots apart', async () => {
    const before = openai.requests.length;
    family.pushUpdate(dmUpdate(owner, 'again family'));
    await family.waitFor(() => family.shown(owner.id).some((t) => t.includes('again family')), 20_000);
    const request = openai.requests.slice(before).find((r) => lastUserText(r).includes('again family'));
    expect(request).toBeDefined();
    const history = JSON.stringify(request!.body.messages);
    expect(history).toContain('hello family');
    expect(history).not.toContain('hello work');
    expect(history).not.toContain('hello main');
    expect(work.shown(owner.id)).toEqual(['echo: hello work']);
  });

  it('pairs a stranger with one bot only: another bot still asks for its own code', async () => {
    const stranger = { id: 6001, first_name: 'Stranger', username: 'stranger' };
    family.pushUpdate(dmUpdate(stranger, 'let me in'));
    await family.waitFor(() => family.sent(stranger.id).length === 1, 20_000);
    expect(family.sent(stranger.id)[0]!.text).toMatch(/pairing approve [A-Z0-9]+/);
    const [request] = await listPairingRequests(redis, prefix);
    expect(request).toMatchObject({ channel: 'telegram-family', senderId: '6001' });
    expect((await approvePairing(redis, prefix, request!.code))?.channel).toBe('telegram-family');

    family.pushUpdate(dmUpdate(stranger, 'paired now'));
    await family.waitFor(() => family.shown(stranger.id).some((t) => t.includes('echo: paired now')), 20_000);
    work.pushUpdate(dmUpdate(stranger, 'and here?'));
    await work.waitFor(() => work.sent(stranger.id).length === 1, 20_000);
    expect(work.sent(stranger.id)[0]!.text).toMatch(/pairing approve [A-Z0-9]+/);
    expect(everythingSent(work, stranger.id).join('\n')).not.toContain('echo:');
    expect(everythingSent(main, stranger.id)).toEqual([]);
  });

  it('shows a live reply through the bot that received the message, and only there', async () => {
    const chat = { ...owner, id: 5002 };
    work.pushUpdate(dmUpdate(chat, 'answer slowly'));
    await work.waitFor(() => work.shown(chat.id).includes('a slow answer, written in pieces'), 20_000);
    // A preview was posted and then edited into the whole answer.
    expect(work.edits.filter((e) => e.chat_id === '5002' && e.outcome === 'edited').length).toBeGreaterThan(
      0,
    );
    expect(work.shown(chat.id)).toEqual(['a slow answer, written in pieces']);
    for (const other of [main, family]) expect(everythingSent(other, chat.id)).toEqual([]);
  });

  it('keeps every bot’s token out of the logs', () => {
    logger.info({ note: `a line holding ${TOKENS.family} and ${TOKENS.work}` }, 'redaction probe');
    const all = logLines.join('\n');
    expect(all).toContain('redaction probe');
    expect(all).toContain('telegram-family');
    for (const token of Object.values(TOKENS)) expect(all).not.toContain(token);
  });
});

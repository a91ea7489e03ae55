/**
 * Message buttons, what is each platform's own (the contract, test/contract,
 * checks what every channel shares: two buttons shown, a press taken once as
 * the presser's command, strangers ignored): where the buttons go on a reply
 * in parts and how they look, a press in a forum topic or thread, a live
 * reply's final edit keeping its buttons, and a button that carries no
 * command — answered, ignored, one warning. Real telegraf and discord.js
 * against the fakes, real Redis for the access check.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { Telegram } from 'telegraf';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { RedisPairingStore } from '../../../src/bus/pairing-store.js';
import { TelegramChannel } from '../../../src/channels/telegram/index.js';
import { TelegramLiveSurface } from '../../../src/channels/telegram/live.js';
import { formatForTelegram, TelegramSender } from '../../../src/channels/telegram/sender.js';
import { silentLogger } from '../../../src/log/index.js';
import { type OutboundAction, OutboundMessageSchema } from '../../../src/messages/messages.js';
import { capturingLogger } from '../../fakes/logger.js';
import { startFakeTelegram } from '../../fakes/telegram-server.js';
import { waitFor } from '../../fakes/wait-for.js';
import { RecordingBus, startHarness } from './discord-harness.js';

const ACTIONS: OutboundAction[] = [
  { label: 'Allow once', command: '/approve K7QF2' },
  { label: 'Deny', command: '/deny K7QF2' },
];
const LONG = `${'A question with a long preamble. '.repeat(200)}\n\nAllow it?`;
/** A pino record's level for warnings. */
const WARN = 40;

const cleanups: Array<() => Promise<void>> = [];
let redis: Redis;
beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
});
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});
afterAll(async () => {
  await redis.quit();
});

const outbound = (channel: string, chatId: string, content: string, extra: Record<string, unknown> = {}) =>
  OutboundMessageSchema.parse({
    id: `q-${randomUUID()}`,
    channel,
    chatId,
    content,
    kind: 'message',
    ...extra,
  });

describe('Telegram buttons', () => {
  async function telegram() {
    const fake = await startFakeTelegram({ token: '4343:buttons-token' });
    cleanups.push(() => fake.close());
    const prefix = `test-${randomUUID()}`;
    const config = parseConfig({
      TELEGRAM_BOT_TOKEN: fake.token,
      TELEGRAM_API_ROOT: fake.apiRoot,
      TELEGRAM_ALLOW_FROM: '@alice',
      MAGPIE_QUEUE_PREFIX: prefix,
    });
    const bus = new RecordingBus();
    const { logger, lines } = capturingLogger();
    const channel = new TelegramChannel(
      { config, bus, logger, pairing: new RedisPairingStore(redis, prefix) },
      { pollTimeoutSeconds: 1, retryDelayMs: 50 },
    );
    await channel.start();
    cleanups.push(() => channel.stop());
    return { fake, bus, channel, lines };
  }
  const alice = { id: 111, first_name: 'Alice', username: 'alice' };

  it('puts one row of buttons, callback_data the command, under the last part of a reply in parts only', async () => {
    const { fake, channel } = await telegram();
    await channel.send(outbound('telegram', '111', LONG, { actions: ACTIONS }));
    const sent = fake.sent(111);
    expect(sent.length).toBeGreaterThanOrEqual(2);
    expect(sent.slice(0, -1).map((m) => m.reply_markup)).toEqual(sent.slice(0, -1).map(() => undefined));
    expect(sent.at(-1)!.reply_markup).toEqual({
      inline_keyboard: [
        [
          { text: 'Allow once', callback_data: '/approve K7QF2' },
          { text: 'Deny', callback_data: '/deny K7QF2' },
        ],
      ],
    });
  });

  it("a press in a forum topic is the presser's message in that topic, answering the question; its buttons go", async () => {
    const { fake, bus, channel } = await telegram();
    await channel.send(
      outbound('telegram', '-100123', 'Allow git push?', { threadId: '77', actions: ACTIONS }),
    );
    const question = fake.sent(-100123)[0]!;
    expect(question.message_thread_id).toBe(77);
    const press = fake.pressButton({
      chatId: -100123,
      messageId: question.message_id,
      data: '/approve K7QF2',
      from: alice,
    });
    // `/approve` is answered on the way in: the press reaches the bus as Alice's answer in that topic.
    await waitFor(() => bus.answers.length === 1);
    expect(bus.answers[0]).toMatchObject({
      sessionKey: 'telegram:-100123/77',
      answer: { code: 'K7QF2', decision: 'allow', senderId: '111', senderName: 'Alice' },
    });
    expect(bus.published).toEqual([]);
    expect(fake.callbackAnswers).toEqual([
      expect.objectContaining({ callback_query_id: press.queryId, outcome: 'answered' }),
    ]);
    expect(fake.markupEdits).toEqual([
      expect.objectContaining({ chat_id: '-100123', message_id: question.message_id, outcome: 'edited' }),
    ]);
    expect(fake.shownMessages(-100123)[0]!.reply_markup).toBeUndefined();
  });

  it('a press on a button that carries no command is answered and ignored, with one warning; the buttons stay', async () => {
    const { fake, bus, lines } = await telegram();
    // A keyboard the bot did not make from actions (an older version's, another program's).
    const foreign = { inline_keyboard: [[{ text: 'Old', callback_data: 'approve:K7QF2' }]] };
    const res = await fetch(`${fake.apiRoot}/bot${fake.token}/sendMessage`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chat_id: 111, text: 'an old question', reply_markup: foreign }),
    });
    const { result } = (await res.json()) as { result: { message_id: number } };
    const press = fake.pressButton({
      chatId: 111,
      messageId: result.message_id,
      data: 'approve:K7QF2',
      from: alice,
    });
    await fake.waitFor(() => fake.callbackAnswers.length === 1);
    expect(fake.callbackAnswers[0]).toMatchObject({ callback_query_id: press.queryId, outcome: 'answered' });
    expect(bus.published).toEqual([]);
    expect(lines.filter((l) => l.level === WARN).map((l) => l.msg)).toEqual(['button press ignored']);
    expect(fake.shownMessages(111)[0]!.reply_markup).toEqual(foreign);
  });

  it("a live reply's final edit carries the buttons (an edit without them drops a keyboard)", async () => {
    const fake = await startFakeTelegram();
    cleanups.push(() => fake.close());
    const api = new Telegram(fake.token, { apiRoot: fake.apiRoot });
    const logger = silentLogger();
    const surface = new TelegramLiveSurface({
      telegram: api,
      logger,
      sender: new TelegramSender({ telegram: api, logger }),
    });
    const target = { chatId: '4242' };
    const id = await surface.post(target, 'Allow git pu', 'turn:0');
    const [part] = formatForTelegram('Allow **git push**?');
    await surface.editFinal(target, id, part!, ACTIONS);
    expect(fake.shownMessages(4242)[0]).toMatchObject({
      text: 'Allow <b>git push</b>?',
      reply_markup: {
        inline_keyboard: [[expect.objectContaining({ callback_data: '/approve K7QF2' }), expect.anything()]],
      },
    });
    await surface.editFinal(target, id, formatForTelegram('Allowed.')[0]!);
    expect(fake.shownMessages(4242)[0]!.reply_markup).toBeUndefined();
  });
});

describe('Discord buttons', () => {
  async function discord() {
    const bus = new RecordingBus();
    const { logger, lines } = capturingLogger();
    const harness = await startHarness({ redisUrl: inject('redisUrl'), bus, logger });
    cleanups.push(() => harness.close());
    await harness.channel.start();
    return { ...harness, bus, lines };
  }

  it('puts one row of buttons (secondary, Deny in red), custom_id the command, under the last part only', async () => {
    const { fake, channel } = await discord();
    const dm = fake.newId();
    await channel.send(outbound('discord', dm, LONG, { actions: ACTIONS }));
    const sent = fake.sent(dm);
    expect(sent.length).toBeGreaterThanOrEqual(2);
    expect(sent.slice(0, -1).map((m) => m.components)).toEqual(sent.slice(0, -1).map(() => undefined));
    expect(sent.at(-1)!.components).toEqual([
      {
        type: 1,
        components: [
          { type: 2, style: 2, label: 'Allow once', custom_id: '/approve K7QF2' },
          { type: 2, style: 4, label: 'Deny', custom_id: '/deny K7QF2' },
        ],
      },
    ]);
  });

  it("a press in a thread is the presser's message in that thread, answered by taking the buttons off", async () => {
    const { fake, bus, channel, owner } = await discord();
    await channel.send(
      outbound('discord', fake.textChannelId, 'Allow git push?', {
        threadId: fake.threadId,
        actions: ACTIONS,
      }),
    );
    const [question] = fake.sent(fake.threadId);
    const interaction = fake.pressButton({
      channelId: fake.threadId,
      messageId: question!.id,
      customId: '/deny K7QF2',
      user: owner,
      nick: 'Captain',
    });
    // `/deny` is answered on the way in: the press reaches the bus as the owner's answer in that thread.
    await waitFor(() => bus.answers.length === 1);
    expect(bus.answers[0]).toMatchObject({
      sessionKey: `discord:${fake.textChannelId}/${fake.threadId}`,
      answer: { code: 'K7QF2', decision: 'deny', senderId: owner.id, senderName: 'Captain' },
    });
    expect(bus.published).toEqual([]);
    expect(interaction).toMatch(/\d+/);
    expect(fake.interactionCallbacks).toEqual([
      expect.objectContaining({
        interactionId: interaction,
        type: 7,
        data: expect.objectContaining({ components: [] }),
      }),
    ]);
    expect(fake.shownMessages(fake.threadId)[0]!.components).toBeUndefined();
  });

  it('a press on a button that carries no command is deferred and ignored, with one warning; the buttons stay', async () => {
    const { fake, bus, owner, lines } = await discord();
    const dm = fake.newId();
    // A button the bot did not make from actions (an older version's).
    const foreign = [
      { type: 1, components: [{ type: 2, style: 1, label: 'Old', custom_id: 'approve:K7QF2' }] },
    ];
    const res = await fetch(`${fake.apiRoot}/v10/channels/${dm}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bot test-token.discord.secret' },
      body: JSON.stringify({ content: 'an old question', components: foreign }),
    });
    const { id: messageId } = (await res.json()) as { id: string };
    const interaction = fake.pressButton({
      channelId: dm,
      messageId,
      customId: 'approve:K7QF2',
      user: owner,
    });
    await fake.waitFor(() => fake.interactionCallbacks.length === 1);
    expect(fake.interactionCallbacks[0]).toMatchObject({
      interactionId: interaction,
      type: 6,
      outcome: 'answered',
    });
    expect(bus.published).toEqual([]);
    expect(lines.filter((l) => l.level === WARN).map((l) => l.msg)).toEqual(['button press ignored']);
    expect(fake.shownMessages(dm)[0]!.components).toEqual(foreign);
  });
});

/**
 * decideUpdate: every inbound rule of the Telegram adapter, with the real
 * AccessControl on real Redis — who is ignored and why, pairing for strangers
 * in a DM only, /stop in its spellings (and the ones that are not) as the
 * intake the channel hands the decision to reads it, topics, and what is published;
 * button presses (callback queries): the chat of the question, the presser, no pairing.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RedisPairingStore } from '../../../src/bus/pairing-store.js';
import { AccessControl } from '../../../src/channels/access.js';
import { intake } from '../../../src/channels/intake.js';
import {
  type DecideContext,
  decideUpdate,
  type TelegramRoute,
} from '../../../src/channels/telegram/decide.js';
import type { TgMessage, TgUpdate, TgUser } from '../../../src/channels/telegram/inbound.js';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
});
afterAll(async () => {
  await redis.quit();
});

const bot = { id: 42, username: 'MagpieBot' };
const owner = { id: 111, is_bot: false, first_name: 'Owner', username: 'owner' };
const stranger = { id: 999, is_bot: false, first_name: 'Eve' };

function context(): DecideContext {
  const access = new AccessControl({
    channel: 'telegram',
    allowFrom: ['111'],
    pairing: new RedisPairingStore(redis, `test-${randomUUID()}`),
  });
  return { channel: 'telegram', bot, access, maxMediaBytes: 1024 * 1024 };
}

let nextId = 1;
function update(message: Partial<TgMessage>): TgUpdate {
  const id = nextId++;
  return {
    update_id: id,
    message: { message_id: id, chat: { id: 111, type: 'private' }, from: owner, ...message },
  };
}
const inGroup = (message: Partial<TgMessage>) =>
  update({ chat: { id: -100, type: 'supergroup', title: 'Friends' }, ...message });

describe('decideUpdate', () => {
  it('publishes a DM from an allowed sender with its route and metadata', async () => {
    const action = await decideUpdate(update({ text: ' hello ' }), context());
    expect(action).toMatchObject({
      kind: 'publish',
      media: [],
      message: {
        channel: 'telegram',
        chatId: '111',
        senderId: '111',
        senderName: 'Owner',
        content: 'hello',
        isGroup: false,
        metadata: { username: 'owner' },
      },
    });
  });

  it('ignores bots, channels, other bots’ commands, unaddressed group messages and empty ones', async () => {
    const ctx = context();
    const reasons = async (u: TgUpdate) => {
      const action = await decideUpdate(u, ctx);
      return action.kind === 'ignore' ? action.reason : action.kind;
    };
    expect(await reasons({ update_id: 0 })).toBe('not a message from a person');
    expect(await reasons(update({ text: 'hi', from: { ...owner, is_bot: true } }))).toBe('from a bot');
    expect(await reasons(update({ text: 'hi', chat: { id: -5, type: 'channel' } }))).toBe(
      'not a private or group chat',
    );
    expect(await reasons(update({ text: '/stop@other_bot' }))).toBe('a command for another bot');
    expect(await reasons(inGroup({ text: 'just chatting' }))).toBe('not addressed to the bot');
    expect(await reasons(update({ text: '   ' }))).toBe('empty message');
  });

  it('gives a stranger in a DM a pairing code once, and says nothing in a group', async () => {
    const ctx = context();
    const first = await decideUpdate(
      update({ text: 'hi', from: stranger, chat: { id: 999, type: 'private' } }),
      ctx,
    );
    expect(first).toMatchObject({ kind: 'pairing', route: { chatId: '999' }, senderId: '999' });
    expect((first as { code: string }).code).toMatch(/^[A-Z2-9]{6}$/);
    const again = await decideUpdate(
      update({ text: 'hi?', from: stranger, chat: { id: 999, type: 'private' } }),
      ctx,
    );
    expect(again).toEqual({ kind: 'ignore', reason: 'pairing code sent recently' });
    const group = await decideUpdate(inGroup({ text: '/stop', from: stranger }), ctx);
    expect(group).toEqual({ kind: 'ignore', reason: 'group message from an unknown sender' });
  });

  it('stops on /stop in every spelling, in a DM, a group and a forum topic', async () => {
    const ctx = context();
    /** The decision, then the intake the channel hands it to: what was cancelled and answered where. */
    const outcome = async (u: TgUpdate) => {
      const action = await decideUpdate(u, ctx);
      if (action.kind !== 'publish') return action;
      const seen: { cancelled?: string; answered?: { route: TelegramRoute; text: string } } = {};
      const result = await intake(
        action.message,
        {
          publish: async () => {},
          cancel: async (sessionKey) => {
            seen.cancelled = sessionKey;
            return true;
          },
          reply: async (text) => {
            seen.answered = { route: action.route, text };
          },
        },
        { bot: bot.username },
      );
      return { result, ...seen };
    };
    for (const text of [
      '/stop',
      '/STOP',
      '/stop now',
      ' /stop',
      '/stop@MagpieBot',
      '/Stop@magpiebot please',
    ]) {
      expect(await outcome(update({ text })), text).toEqual({
        result: 'answered',
        cancelled: 'telegram:111',
        answered: { route: { chatId: '111' }, text: 'Stopping.' },
      });
    }
    expect(await outcome(inGroup({ text: '/stop@MagpieBot' }))).toMatchObject({
      result: 'answered',
      cancelled: 'telegram:-100',
    });
    const topic = inGroup({ text: '/stop', message_thread_id: 7, is_topic_message: true });
    expect(await outcome(topic)).toEqual({
      result: 'answered',
      cancelled: 'telegram:-100/7',
      answered: { route: { chatId: '-100', threadId: '7' }, text: 'Stopping.' },
    });
  });

  it('publishes text that only looks like /stop', async () => {
    const ctx = context();
    for (const text of ['stop', '/stopp', 'please /stop', '/stop\nand more']) {
      const action = await decideUpdate(update({ text }), ctx);
      expect(action, text).toMatchObject({ kind: 'publish', message: { content: text } });
    }
  });

  it('publishes a captioned photo with the attachment to fetch, in the group’s topic', async () => {
    const photo = [{ file_id: 'p1', file_size: 1000, width: 90, height: 90 }];
    const action = await decideUpdate(
      inGroup({
        caption: '@MagpieBot what is this?',
        caption_entities: [{ type: 'mention', offset: 0, length: 10 }],
        photo,
        message_thread_id: 7,
        is_topic_message: true,
      }),
      context(),
    );
    expect(action).toMatchObject({
      kind: 'publish',
      media: [{ kind: 'image', fileId: 'p1', download: true }],
      message: {
        chatId: '-100',
        threadId: '7',
        content: 'what is this?',
        isGroup: true,
        metadata: { chatTitle: 'Friends' },
      },
    });
  });

  it('names a named bot account’s messages and presses by its instance (channel, id, and so the session)', async () => {
    const ctx = { ...context(), channel: 'telegram-family' };
    const message = await decideUpdate(update({ text: 'hi' }), ctx);
    expect(message).toMatchObject({ kind: 'publish', message: { channel: 'telegram-family' } });
    if (message.kind !== 'publish') throw new Error('expected publish');
    expect(message.message.id).toMatch(/^telegram-family:111:\d+$/);
    const press = await decideUpdate(
      {
        update_id: nextId++,
        callback_query: {
          id: 'q-family',
          from: owner,
          data: '/approve K7QF2',
          message: { message_id: 556, chat: { id: 111, type: 'private' } },
        },
      },
      ctx,
    );
    expect(press).toMatchObject({
      kind: 'press',
      decision: {
        kind: 'publish',
        message: { id: 'telegram-family:111:cbq:q-family', channel: 'telegram-family' },
      },
    });
  });

  describe('a button press (callback_query)', () => {
    const query = (from: TgUser, message?: Partial<TgMessage>, data = '/approve K7QF2'): TgUpdate => ({
      update_id: nextId++,
      callback_query: {
        id: `q${nextId}`,
        from,
        data,
        ...(message ? { message: { message_id: 555, chat: { id: 111, type: 'private' }, ...message } } : {}),
      },
    });

    it("is the presser's command in the question's chat and topic, with the message whose buttons go", async () => {
      const update = query(owner, {
        chat: { id: -100, type: 'supergroup', title: 'Friends' },
        message_thread_id: 7,
        is_topic_message: true,
      });
      const action = await decideUpdate(update, context());
      expect(action).toEqual({
        kind: 'press',
        queryId: update.callback_query!.id,
        holder: { route: { chatId: '-100', threadId: '7' }, messageId: 555 },
        decision: {
          kind: 'publish',
          message: {
            id: `telegram:-100:cbq:${update.callback_query!.id}`,
            channel: 'telegram',
            chatId: '-100',
            threadId: '7',
            senderId: '111',
            senderName: 'Owner',
            content: '/approve K7QF2',
            platformMessageId: '555',
            isGroup: true,
            metadata: { username: 'owner', chatTitle: 'Friends' },
          },
        },
      });
    });

    it('is ignored from a stranger, even in a DM (no pairing code), and without a message', async () => {
      expect(
        await decideUpdate(query(stranger, { chat: { id: 999, type: 'private' } }), context()),
      ).toMatchObject({
        kind: 'press',
        decision: { kind: 'ignore', reason: 'pressed by a sender who may not talk to the bot' },
      });
      expect(await decideUpdate(query(owner), context())).toMatchObject({
        kind: 'press',
        decision: { kind: 'ignore' },
      });
      expect((await decideUpdate(query(owner), context())) as { holder?: unknown }).not.toHaveProperty(
        'holder',
      );
    });
  });
});

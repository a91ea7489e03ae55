/**
 * The Channel contract for Telegram: the user is a fake Bot API's updates
 * (DMs from an allowed username, a supergroup, strangers), and the chat is
 * what the bot sent there, its HTML read back as the user sees it (code
 * blocks shown as ``` fences with their language). Buttons are a message's
 * inline keyboard; a press is the fake's callback query, answered once the
 * fake has an answerCallbackQuery for every delivery of it.
 */

import {
  dmUpdate,
  type FakeTelegram,
  groupUpdate,
  mentioning,
  startFakeTelegram,
} from '../fakes/telegram-server.js';
import { describeChannelContract } from './channel-contract.js';
import { type ChannelHarness, type ChatRef, fakeReaders, type HarnessFactory } from './harness.js';

const OWNER = 'owner';

/** Telegram HTML as the user reads it: tags gone, entities decoded, code blocks as fences. */
function htmlAsRead(html: string): string {
  return html
    .replace(/<pre><code class="language-([\w+-]+)">/g, '```$1\n')
    .replace(/<\/code><\/pre>/g, '\n```')
    .replace(/<pre>/g, '```\n')
    .replace(/<\/pre>/g, '\n```')
    .replace(/<[^>]+>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&amp;/g, '&');
}

const telegram: HarnessFactory = {
  capabilities: {
    groups: true,
    pairing: true,
    media: true,
    typing: true,
    edits: true,
    redelivery: true,
    buttons: true,
    live: true,
  },
  textLimit: 4096,
  async start(stack) {
    const fake: FakeTelegram = await startFakeTelegram({ token: '777:contract-telegram-token' });
    // DMs: a chat per name, its id the user's (Telegram's private chats); the username is allowed.
    const ids = new Map<string, number>();
    const idOf = (key: string, base: number) => {
      let id = ids.get(key);
      if (id === undefined) {
        id = base - ids.size;
        ids.set(key, id);
      }
      return id;
    };
    // A stranger per chat name, not on the allow-list: in a DM the chat is theirs.
    const strangerId = (where: ChatRef) => idOf(`stranger:${where.chat ?? 'main'}`, 9000);
    const chatIdOf = (where: ChatRef = {}): number => {
      if (where.group) return idOf(`group:${where.chat ?? 'main'}`, -2000);
      return where.stranger ? strangerId(where) : idOf(`dm:${where.chat ?? 'main'}`, 9000);
    };
    const userIn = (where: ChatRef) =>
      where.stranger
        ? { id: strangerId(where), first_name: 'New', username: `stranger${strangerId(where)}` }
        : { id: where.group ? 5001 : chatIdOf(where), first_name: 'Owner', username: OWNER };
    await stack.startMagpie({
      TELEGRAM_BOT_TOKEN: fake.token,
      TELEGRAM_API_ROOT: fake.apiRoot,
      TELEGRAM_ALLOW_FROM: `@${OWNER}`,
    });
    const typing = (where?: ChatRef) => {
      const chat = String(chatIdOf(where));
      return fake.calls.filter(
        (c) =>
          c.method === 'sendChatAction' && String(c.params.chat_id) === chat && c.params.action === 'typing',
      ).length;
    };
    // What the chat finally shows: not-deleted messages, each with its latest edit, as read.
    const shown = (where?: ChatRef) =>
      fake.shownMessages(chatIdOf(where)).map((m) => (m.parse_mode === 'HTML' ? htmlAsRead(m.text) : m.text));
    const keyboards = (where?: ChatRef) =>
      fake
        .shownMessages(chatIdOf(where))
        .flatMap((m) =>
          m.reply_markup ? [{ id: m.message_id, buttons: m.reply_markup.inline_keyboard.flat() }] : [],
        );
    const harness: ChannelHarness = {
      capabilities: telegram.capabilities,
      textLimit: telegram.textLimit,
      mention: `@${fake.bot.username}`,
      sessionKey: (where) => `telegram:${chatIdOf(where)}`,
      async userSays(text, options = {}) {
        const update = options.group
          ? groupUpdate(
              chatIdOf(options),
              userIn(options),
              text,
              options.mention ? mentioning(fake.bot.username, text) : {},
            )
          : dmUpdate(userIn(options), text);
        fake.pushUpdate(update);
        // Telegram delivers an update again when the gateway stopped before confirming it; the
        // restarted poller has not seen its id. A fresh update_id stands for that (a live poller
        // drops an id it has passed).
        if (options.twice) fake.pushUpdate({ ...update });
      },
      ...fakeReaders(fake, { shown, typing, shownCount: (where) => fake.shown(chatIdOf(where)).length }),
      async edits(where) {
        const chat = String(chatIdOf(where));
        return fake.edits.filter((e) => e.chat_id === chat && e.outcome === 'edited').length;
      },
      address: (where) => ({ channel: 'telegram', chatId: String(chatIdOf(where)) }),
      senderId: (where = {}) => String(userIn(where).id),
      async buttons(where) {
        return keyboards(where).map((k) => k.buttons.map((b) => b.text));
      },
      async pressButton(label, where = {}, options = {}) {
        const holder = keyboards(where).findLast((k) => k.buttons.some((b) => b.text === label));
        const data = holder?.buttons.find((b) => b.text === label)?.callback_data;
        if (!holder || data === undefined) throw new TypeError(`no button "${label}" in the chat`);
        const press = fake.pressButton({
          chatId: chatIdOf(where),
          messageId: holder.id,
          data,
          from: userIn(options.by === 'stranger' ? { ...where, stranger: true } : where),
        });
        // Telegram sends an update again when it was not confirmed: a fresh update_id stands for that.
        if (options.twice) fake.pushUpdate({ ...press.update });
        const answers = options.twice ? 2 : 1;
        await fake.waitFor(
          () => fake.callbackAnswers.filter((a) => a.callback_query_id === press.queryId).length >= answers,
          20_000,
        );
      },
      close: () => fake.close(),
    };
    return harness;
  },
};

describeChannelContract('telegram', telegram);

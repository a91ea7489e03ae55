/**
 * The Channel contract for Discord: the user is the fake gateway's
 * MESSAGE_CREATE events (DMs from an allowed user, the test guild's text
 * channel, strangers), and the chat is what the bot posted there over REST —
 * Markdown, which is what the Discord client shows. Buttons are a message's
 * components; a press is the fake's INTERACTION_CREATE, answered once the
 * fake has an interaction callback for every delivery of it.
 */
import { type FakeDiscord, type FakeUser, startFakeDiscord } from '../fakes/discord-server.js';
import { describeChannelContract } from './channel-contract.js';
import { type ChannelHarness, type ChatRef, fakeReaders, type HarnessFactory } from './harness.js';

const discord: HarnessFactory = {
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
  textLimit: 2000,
  async start(stack) {
    const token = 'contract-discord-token';
    const fake: FakeDiscord = await startFakeDiscord({ token });
    const owner: FakeUser = { id: fake.newId(), username: 'owner', global_name: 'Owner' };
    // A DM channel per chat name; the group is the test guild's text channel.
    const channels = new Map<string, string>();
    const strangers = new Map<string, FakeUser>();
    const channelOf = (where: ChatRef = {}): string => {
      if (where.group) return fake.textChannelId;
      const key = `${where.stranger ? 'stranger' : 'dm'}:${where.chat ?? 'main'}`;
      let id = channels.get(key);
      if (id === undefined) {
        id = fake.newId();
        channels.set(key, id);
      }
      return id;
    };
    const authorIn = (where: ChatRef): FakeUser => {
      if (!where.stranger) return owner;
      const name = where.chat ?? 'main';
      let user = strangers.get(name);
      if (!user) {
        user = { id: fake.newId(), username: `stranger-${name}` };
        strangers.set(name, user);
      }
      return user;
    };
    await stack.startMagpie({
      DISCORD_BOT_TOKEN: token,
      DISCORD_API_ROOT: fake.apiRoot,
      DISCORD_ALLOW_FROM: owner.id,
    });
    const typing = (where?: ChatRef) => {
      const path = `/channels/${channelOf(where)}/typing`;
      return fake.calls.filter((c) => c.path === path).length;
    };
    // What the channel finally shows: not-deleted messages, each with its latest edit.
    const shown = (where?: ChatRef) => fake.shown(channelOf(where));
    const buttonRows = (where?: ChatRef) =>
      fake
        .shownMessages(channelOf(where))
        .flatMap((m) =>
          m.components ? [{ id: m.id, buttons: m.components.flatMap((r) => r.components) }] : [],
        );
    const harness: ChannelHarness = {
      capabilities: discord.capabilities,
      textLimit: discord.textLimit,
      mention: `<@${fake.botUserId}>`,
      sessionKey: (where) => `discord:${channelOf(where)}`,
      async userSays(text, options = {}) {
        const mentioned = options.group && options.mention;
        const message = {
          channelId: channelOf(options),
          author: authorIn(options),
          content: mentioned ? `<@${fake.botUserId}> ${text}` : text,
          ...(options.group ? { guildId: fake.guildId, nick: 'Captain' } : {}),
          ...(mentioned ? { mentions: [{ id: fake.botUserId, username: fake.botUsername, bot: true }] } : {}),
        };
        const id = fake.dispatchMessage(message);
        // The gateway replays events after a resume: the same message, same id.
        if (options.twice) fake.dispatchMessage({ ...message, id });
      },
      ...fakeReaders(fake, { shown, typing }),
      async edits(where) {
        const channel = channelOf(where);
        return fake.edits.filter((e) => e.channelId === channel && e.outcome === 'edited').length;
      },
      address: (where) => ({ channel: 'discord', chatId: channelOf(where) }),
      senderId: (where = {}) => authorIn(where).id,
      async buttons(where) {
        return buttonRows(where).map((row) => row.buttons.map((b) => b.label ?? ''));
      },
      async pressButton(label, where = {}, options = {}) {
        const holder = buttonRows(where).findLast((row) => row.buttons.some((b) => b.label === label));
        const customId = holder?.buttons.find((b) => b.label === label)?.custom_id;
        if (!holder || customId === undefined) throw new TypeError(`no button "${label}" in the chat`);
        const id = fake.pressButton({
          channelId: channelOf(where),
          messageId: holder.id,
          customId,
          user: authorIn(options.by === 'stranger' ? { ...where, stranger: true } : where),
          ...(where.group ? { nick: 'Captain' } : {}),
        });
        // The gateway replays events after a resume: the same interaction, same id.
        if (options.twice) fake.replayInteraction(id);
        const answers = options.twice ? 2 : 1;
        await fake.waitFor(
          () => fake.interactionCallbacks.filter((c) => c.interactionId === id).length >= answers,
          20_000,
        );
      },
      close: () => fake.close(),
    };
    return harness;
  },
};

describeChannelContract('discord', discord);

/**
 * The Channel contract for Slack: the user is the fake's Socket Mode
 * `message` events (a DM channel per chat; a group chat is a thread in a
 * public channel, whose root the user wrote before), and the chat is what the
 * bot posted there over the Web API — mrkdwn, read back as the user reads it
 * (entities undone, `*bold*` marks and `<url|text>` links shown as text).
 * Buttons are a message's `actions` block; a press is the fake's
 * `block_actions` envelope, answered once the adapter acknowledged every
 * delivery of it. Typing is a reaction, not a repeated indicator, so the
 * typing case is not declared (slack-bus.test.ts checks the reaction).
 */
import { type FakeSlack, type FakeSlackUser, startFakeSlack } from '../fakes/slack-server.js';
import { describeChannelContract } from './channel-contract.js';
import { type ChannelHarness, type ChatRef, fakeReaders, type HarnessFactory } from './harness.js';

/** What a user reads of a mrkdwn message. */
export function readable(mrkdwn: string): string {
  let inCode = false;
  return mrkdwn
    .split('\n')
    .map((line) => {
      if (line.startsWith('```')) inCode = !inCode;
      const text = inCode || line.startsWith('```') ? line : line.replace(/\*([^*\n]+)\*/g, '$1');
      return text
        .replace(/<([^|>]+)\|([^>]+)>/g, '$2')
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&amp;/g, '&');
    })
    .join('\n');
}

const slack: HarnessFactory = {
  capabilities: {
    groups: true,
    pairing: true,
    media: true,
    typing: false,
    edits: true,
    live: true,
    redelivery: true,
    buttons: true,
  },
  textLimit: 3000,
  async start(stack) {
    const botToken = 'xoxb-contract-slack';
    const appToken = 'xapp-contract-slack';
    const fake: FakeSlack = await startFakeSlack({ botToken, appToken });
    const owner: FakeSlackUser = { id: fake.newId('U'), name: 'owner', realName: 'Owner' };
    fake.addUser(owner);
    const channel = fake.newId('C');
    const dms = new Map<string, string>();
    const threads = new Map<string, string>();
    const strangers = new Map<string, FakeSlackUser>();
    const authorIn = (where: ChatRef): FakeSlackUser => {
      if (!where.stranger) return owner;
      const name = where.chat ?? 'main';
      let user = strangers.get(name);
      if (!user) {
        user = { id: fake.newId('U'), name: `stranger-${name}` };
        fake.addUser(user);
        strangers.set(name, user);
      }
      return user;
    };
    /** The conversation: a DM channel, or the group chat's thread in the channel. */
    const place = (where: ChatRef = {}): { channel: string; threadTs?: string } => {
      const name = where.chat ?? 'main';
      if (where.group) {
        let root = threads.get(name);
        if (root === undefined) {
          root = fake.addUserMessage(channel, owner.id, `topic ${name}`);
          threads.set(name, root);
        }
        return { channel, threadTs: root };
      }
      const key = `${where.stranger ? 'stranger' : 'dm'}:${name}`;
      let id = dms.get(key);
      if (id === undefined) {
        id = fake.newId('D');
        dms.set(key, id);
      }
      return { channel: id };
    };
    await stack.startMagpie({
      SLACK_BOT_TOKEN: botToken,
      SLACK_APP_TOKEN: appToken,
      SLACK_API_ROOT: fake.apiRoot,
      SLACK_ALLOW_FROM: owner.id,
    });
    const shownIn = (where?: ChatRef) => {
      const p = place(where);
      return fake.messages(p.channel, p.threadTs);
    };
    const shown = (where?: ChatRef) => {
      const p = place(where);
      return fake.shown(p.channel, p.threadTs).map(readable);
    };
    const buttonsIn = (where?: ChatRef) =>
      shownIn(where).flatMap((m) => {
        const buttons = (m.blocks ?? []).flatMap((b) => (b.type === 'actions' ? (b.elements ?? []) : []));
        return buttons.length > 0 ? [{ ts: m.ts, buttons }] : [];
      });
    const harness: ChannelHarness = {
      capabilities: slack.capabilities,
      textLimit: slack.textLimit,
      mention: `<@${fake.botUserId}>`,
      sessionKey(where) {
        const p = place(where);
        return p.threadTs ? `slack:${p.channel}/${p.threadTs}` : `slack:${p.channel}`;
      },
      async userSays(text, options = {}) {
        const p = place(options);
        const mentioned = options.group && options.mention;
        const { envelopeId } = fake.deliverMessage({
          channel: p.channel,
          user: authorIn(options).id,
          text: mentioned ? `<@${fake.botUserId}> ${text}` : text,
          ...(p.threadTs ? { threadTs: p.threadTs, parentUserId: owner.id } : {}),
        });
        // Slack retries an envelope (same event, new envelope id).
        if (options.twice) fake.redeliver(envelopeId);
      },
      ...fakeReaders(fake, { shown, typing: () => 0 }),
      async edits(where) {
        const p = place(where);
        const ids = new Set(shownIn(where).map((m) => m.ts));
        return fake.edits.filter((e) => e.channel === p.channel && ids.has(e.ts) && e.outcome === 'edited')
          .length;
      },
      address: (where) => {
        const p = place(where);
        return { channel: 'slack', chatId: p.channel, ...(p.threadTs ? { threadId: p.threadTs } : {}) };
      },
      senderId: (where = {}) => authorIn(where).id,
      async buttons(where) {
        return buttonsIn(where).map((m) => m.buttons.map((b) => b.text?.text ?? ''));
      },
      async pressButton(label, where = {}, options = {}) {
        const holder = buttonsIn(where).findLast((m) => m.buttons.some((b) => b.text?.text === label));
        const actionId = holder?.buttons.find((b) => b.text?.text === label)?.action_id;
        if (!holder || actionId === undefined) throw new TypeError(`no button "${label}" in the chat`);
        const user = authorIn(options.by === 'stranger' ? { ...where, stranger: true } : where);
        const first = fake.pressButton({ channel: place(where).channel, ts: holder.ts, actionId, user });
        const ids = [first, ...(options.twice ? [fake.redeliver(first)] : [])];
        await fake.waitFor(
          () => ids.every((id) => fake.envelopes.find((e) => e.envelopeId === id)?.acked),
          20_000,
        );
      },
      close: () => fake.close(),
    };
    return harness;
  },
};

describeChannelContract('slack', slack);

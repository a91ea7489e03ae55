/**
 * The Channel contract for Matrix: the user is an account on the fake
 * homeserver (test/fakes/matrix-server.ts) writing `m.room.message` events;
 * magpie's real matrix-js-sdk client syncs them. A DM is a room of two (the
 * owner or a stranger, and the bot); a group chat is a room of three (the
 * owner, the bot and a stranger), where the bot is mentioned by its user id
 * in the body and in `m.mentions`. Replies are read back as the room shows
 * them: each message's plain `body` (the Markdown) after its `m.replace`
 * edits, redacted ones left out. A repeated delivery is the same event in a
 * later sync. Matrix has no buttons: approval questions are answered by
 * typing `/approve CODE`.
 */
import { type FakeMatrix, startFakeMatrix } from '../fakes/matrix-server.js';
import { describeChannelContract } from './channel-contract.js';
import { type ChannelHarness, type ChatRef, fakeReaders, type HarnessFactory } from './harness.js';

const matrix: HarnessFactory = {
  capabilities: {
    groups: true,
    pairing: true,
    media: false,
    typing: true,
    edits: true,
    live: true,
    redelivery: true,
    buttons: false,
  },
  textLimit: 4000,
  async start(stack) {
    const fake: FakeMatrix = await startFakeMatrix();
    const bot = fake.addUser('magpie', { token: 'syt_contract_bot', displayName: 'magpie' });
    const owner = fake.addUser('owner', { displayName: 'Owner' });
    const rooms = new Map<string, string>();
    const strangers = new Map<string, string>();
    const strangerOf = (name: string): string => {
      let id = strangers.get(name);
      if (!id) {
        id = fake.addUser(`stranger-${name.toLowerCase().replace(/[^a-z0-9]/g, '')}-${strangers.size}`);
        strangers.set(name, id);
      }
      return id;
    };
    const author = (where: ChatRef = {}) => (where.stranger ? strangerOf(where.chat ?? 'main') : owner);
    const room = (where: ChatRef = {}): string => {
      const name = where.chat ?? 'main';
      const key = `${where.group ? 'group' : where.stranger ? 'stranger' : 'dm'}:${name}`;
      let id = rooms.get(key);
      if (!id) {
        id = where.group
          ? fake.createRoom([owner, bot, strangerOf(name)])
          : fake.createRoom([author(where), bot]);
        rooms.set(key, id);
      }
      return id;
    };
    await stack.startMagpie({
      MATRIX_HOMESERVER_URL: fake.url,
      MATRIX_ACCESS_TOKEN: 'syt_contract_bot',
      MATRIX_ALLOW_FROM: owner,
    });
    const shown = (where?: ChatRef) => fake.shown(room(where), bot).map((m) => m.body);
    const harness: ChannelHarness = {
      capabilities: matrix.capabilities,
      textLimit: matrix.textLimit,
      mention: bot,
      sessionKey: (where) => `matrix:${room(where)}`,
      async userSays(text, options = {}) {
        const mentioned = options.group && options.mention;
        const id = fake.say(room(options), author(options), {
          msgtype: 'm.text',
          body: mentioned ? `${bot} ${text}` : text,
          ...(mentioned ? { 'm.mentions': { user_ids: [bot] } } : {}),
        });
        if (options.twice) fake.redeliver(id);
      },
      ...fakeReaders(fake, { shown, typing: (where) => fake.typing(room(where)) }),
      async edits(where) {
        return fake.shown(room(where), bot).reduce((sum, m) => sum + m.edits, 0);
      },
      close: () => fake.close(),
    };
    return harness;
  },
};

describeChannelContract('matrix', matrix);

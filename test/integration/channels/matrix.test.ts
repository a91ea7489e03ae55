/**
 * The Matrix channel's own cases, real matrix-js-sdk client against the fake
 * homeserver and a real Bus on the test Redis: the sync position (first start
 * answers no history; a restart takes exactly what it missed; Redis away
 * holds the position), several gateways, invitations, addressing in group
 * rooms, threads, HTML replies, live edits, media, malformed events, the
 * password login's kept device, and an encrypted event without its key
 * (matrix-e2ee.test.ts has the encrypted round trip and the notice).
 */
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { waitFor } from '../../fakes/wait-for.js';
import { type MatrixFixture, matrixFixture } from './matrix-harness.js';

let fx: MatrixFixture;

beforeEach(async () => {
  fx = await matrixFixture(inject('redisUrl'));
});

afterEach(async () => {
  await fx.close();
});

const text = (body: string, extra: Record<string, unknown> = {}) => ({ msgtype: 'm.text', body, ...extra });

describe('the sync position', () => {
  it('on a first start answers no history, then takes what comes after', async () => {
    const dm = fx.fake.createRoom([fx.owner, fx.bot]);
    fx.fake.say(dm, fx.owner, text('old history'));
    const gw = await fx.gateway();
    fx.fake.say(dm, fx.owner, text('new message'));
    await waitFor(async () => (await gw.mailbox(dm)).length >= 1, 10_000, 'the new message');
    expect(await gw.mailbox(dm)).toEqual(['new message']);
  });
});

describe('restarts and several gateways', () => {
  it('a restart takes exactly what was missed while it was down: nothing lost, nothing twice', async () => {
    const dm = fx.fake.createRoom([fx.owner, fx.bot]);
    const first = await fx.gateway();
    fx.fake.say(dm, fx.owner, text('before the stop'));
    await waitFor(async () => (await first.mailbox(dm)).length >= 1, 10_000, 'the first message');
    await first.stop();
    fx.fake.say(dm, fx.owner, text('missed one'));
    fx.fake.say(dm, fx.owner, text('missed two'));
    const syncsBefore = fx.fake.syncs.length;
    const second = await fx.gateway();
    fx.fake.say(dm, fx.owner, text('after the restart'));
    await waitFor(async () => (await second.mailbox(dm)).length >= 4, 10_000, 'every message');
    expect(await second.mailbox(dm)).toEqual([
      'before the stop',
      'missed one',
      'missed two',
      'after the restart',
    ]);
    // The restart went on from the kept position: no sync without `since` (history) was made.
    expect(fx.fake.syncs.slice(syncsBefore).every((s) => s.since !== undefined)).toBe(true);
  });

  it('two gateways on one bus take each event once', async () => {
    const dm = fx.fake.createRoom([fx.owner, fx.bot]);
    const a = await fx.gateway();
    const b = await fx.gateway();
    const published: string[] = [];
    for (const gw of [a, b]) {
      const publish = gw.bus.publishInbound.bind(gw.bus);
      gw.bus.publishInbound = async (message) => {
        await publish(message);
        published.push(message.id);
      };
    }
    fx.fake.say(dm, fx.owner, text('one'));
    fx.fake.say(dm, fx.owner, text('two'));
    // Each gateway syncs and publishes both events: four publishes of two ids.
    await waitFor(() => published.length >= 4, 10_000, 'both gateways publishing both events');
    expect(new Set(published).size).toBe(2);
    expect(await a.mailbox(dm)).toEqual(['one', 'two']);
  });

  it('holds the position while the bus refuses: the same events are taken once it is back', async () => {
    const dm = fx.fake.createRoom([fx.owner, fx.bot]);
    const gw = await fx.gateway();
    const publish = gw.bus.publishInbound.bind(gw.bus);
    let refused = 0;
    gw.bus.publishInbound = async (message) => {
      if (refused < 3) {
        refused++;
        throw new Error('connection is closed');
      }
      await publish(message);
    };
    fx.fake.say(dm, fx.owner, text('kept safe'));
    await waitFor(async () => (await gw.mailbox(dm)).length >= 1, 10_000, 'the message after the refusals');
    expect(refused).toBe(3);
    expect(await gw.mailbox(dm)).toEqual(['kept safe']);
  });

  it('a password login happens once: the restart reuses the kept device', async () => {
    const env = { MATRIX_ACCESS_TOKEN: '', MATRIX_USER_ID: fx.bot, MATRIX_PASSWORD: 'bot-password' };
    const first = await fx.gateway(env);
    await first.stop();
    await fx.gateway(env);
    expect(fx.fake.logins).toHaveLength(1);
  });

  it('a wrong password is one clear configuration error', async () => {
    const env = { MATRIX_ACCESS_TOKEN: '', MATRIX_USER_ID: fx.bot, MATRIX_PASSWORD: 'wrong' };
    await expect(fx.gateway(env)).rejects.toThrow(
      /refused MATRIX_USER_ID and MATRIX_PASSWORD \(M_FORBIDDEN\)/,
    );
  });
});

describe('invitations and addressing', () => {
  it('accepts an invitation from an allowed user and ignores one from anyone else', async () => {
    await fx.gateway();
    const fromOwner = fx.fake.createRoom([fx.owner]);
    const fromStranger = fx.fake.createRoom([fx.stranger]);
    fx.fake.invite(fromStranger, fx.stranger, fx.bot);
    fx.fake.invite(fromOwner, fx.owner, fx.bot);
    await fx.fake.waitFor(() => fx.fake.members(fromOwner).get(fx.bot) === 'join');
    expect(fx.fake.members(fromStranger).get(fx.bot)).toBe('invite');
  });

  it('in a group room answers a mention (m.mentions, user id, display name) or a reply to it, nothing else', async () => {
    const group = fx.fake.createRoom([fx.owner, fx.bot, fx.stranger]);
    const gw = await fx.gateway();
    fx.fake.say(group, fx.owner, text('just chatting'));
    fx.fake.say(group, fx.owner, text('pill', { 'm.mentions': { user_ids: [fx.bot] } }));
    fx.fake.say(group, fx.owner, text(`${fx.bot} by id`));
    fx.fake.say(group, fx.owner, text('Magpie: by name'));
    fx.fake.say(group, fx.owner, text('magpies are birds, no mention'));
    fx.fake.say(group, fx.stranger, text(`${fx.bot} stranger speaking`));
    await gw.channel.send({
      id: 'out-1',
      kind: 'message',
      channel: 'matrix',
      chatId: group,
      content: 'bot said',
      live: false,
    } as never);
    const botEvent = fx.fake.shown(group, fx.bot)[0]!.eventId;
    fx.fake.say(
      group,
      fx.owner,
      text('a reply', { 'm.relates_to': { 'm.in_reply_to': { event_id: botEvent } } }),
    );
    fx.fake.say(group, fx.owner, text('marker', { 'm.mentions': { user_ids: [fx.bot] } }));
    await waitFor(async () => (await gw.mailbox(group)).includes('marker'), 10_000, 'the marker');
    expect(await gw.mailbox(group)).toEqual(['pill', 'by id', 'by name', 'a reply', 'marker']);
  });

  it('a thread is its own conversation, answered in the thread', async () => {
    const dm = fx.fake.createRoom([fx.owner, fx.bot]);
    const gw = await fx.gateway();
    const root = fx.fake.say(dm, fx.owner, text('in the room'));
    fx.fake.say(
      dm,
      fx.owner,
      text('in the thread', { 'm.relates_to': { rel_type: 'm.thread', event_id: root } }),
    );
    await waitFor(async () => (await gw.mailbox(dm, root)).length >= 1, 10_000, 'the thread message');
    expect(await gw.mailbox(dm)).toEqual(['in the room']);
    expect(await gw.mailbox(dm, root)).toEqual(['in the thread']);
    await gw.channel.send({
      id: 'out-thread',
      kind: 'message',
      channel: 'matrix',
      chatId: dm,
      threadId: root,
      content: 'threaded answer',
    } as never);
    expect(fx.fake.shown(dm, fx.bot)).toEqual([
      expect.objectContaining({ body: 'threaded answer', thread: root }),
    ]);
  });

  it('ignores malformed events without stopping', async () => {
    const dm = fx.fake.createRoom([fx.owner, fx.bot]);
    const gw = await fx.gateway();
    fx.fake.sayRaw(dm, { type: 'm.room.message', sender: fx.owner, content: 'not an object' });
    fx.fake.sayRaw(dm, { event_id: '$x1', type: 'm.room.message', sender: 42, content: {} });
    fx.fake.sayRaw(dm, {
      event_id: '$x2',
      type: 'm.room.message',
      sender: fx.owner,
      content: { msgtype: 'm.text', body: 7 },
    });
    fx.fake.sayRaw(dm, {
      event_id: '$x3',
      type: 'm.room.message',
      sender: fx.owner,
      content: { msgtype: 'm.image', body: 'x', url: 'https://evil.example/x' },
    });
    fx.fake.say(dm, fx.owner, text('still here'));
    await waitFor(async () => (await gw.mailbox(dm)).length >= 1, 10_000, 'the good message');
    expect(await gw.mailbox(dm)).toEqual(['still here']);
  });
});

describe('what the bot sends', () => {
  it('a reply is HTML with the Markdown as plain body, split under the limit', async () => {
    const dm = fx.fake.createRoom([fx.owner, fx.bot]);
    const gw = await fx.gateway();
    await gw.channel.send({
      id: 'out-html',
      kind: 'message',
      channel: 'matrix',
      chatId: dm,
      content: '**bold** and <script>x</script>',
    } as never);
    const [shown] = fx.fake.shown(dm, fx.bot);
    expect(shown).toMatchObject({
      body: '**bold** and <script>x</script>',
      format: 'org.matrix.custom.html',
    });
    expect(shown!.formattedBody).toBe('<p><strong>bold</strong> and &lt;script&gt;x&lt;/script&gt;</p>');
    await gw.channel.send({
      id: 'out-long',
      kind: 'message',
      channel: 'matrix',
      chatId: dm,
      content: 'word '.repeat(2000),
    } as never);
    const parts = fx.fake.shown(dm, fx.bot).slice(1);
    expect(parts.length).toBe(3);
    for (const p of parts) expect(p.body.length).toBeLessThanOrEqual(4000);
  });

  it('a live reply grows by m.replace edits and ends as the formatted message', async () => {
    const dm = fx.fake.createRoom([fx.owner, fx.bot]);
    const gw = await fx.gateway();
    const base = { turn: 'turn-1', channel: 'matrix', chatId: dm };
    await gw.channel.preview({ ...base, text: 'First words', seq: 1, metadata: {} });
    await fx.fake.waitFor(() => fx.fake.shown(dm, fx.bot).length === 1);
    await gw.channel.preview({ ...base, text: 'First words and more', seq: 2, metadata: {} });
    await fx.fake.waitFor(() => fx.fake.shown(dm, fx.bot)[0]?.body === 'First words and more');
    await gw.channel.send({
      id: 'out-live',
      kind: 'message',
      channel: 'matrix',
      chatId: dm,
      content: 'First words and **more**.',
      live: 'turn-1',
    } as never);
    const shown = fx.fake.shown(dm, fx.bot);
    expect(shown).toHaveLength(1);
    expect(shown[0]).toMatchObject({
      body: 'First words and **more**.',
      formattedBody: '<p>First words and <strong>more</strong>.</p>',
    });
    expect(shown[0]!.edits).toBeGreaterThanOrEqual(2);
  });

  it('an image reaches the model as a data URL fetched with the token from the authenticated media API', async () => {
    const dm = fx.fake.createRoom([fx.owner, fx.bot]);
    const gw = await fx.gateway();
    const png = Buffer.from('89504e470d0a1a0a', 'hex');
    const mxc = fx.fake.upload(png, 'image/png');
    fx.fake.say(dm, fx.owner, {
      msgtype: 'm.image',
      body: 'cat.png',
      url: mxc,
      info: { mimetype: 'image/png', size: png.length },
    });
    const read = await waitFor(
      async () => {
        const r = await gw.bus.mailbox(`matrix:${dm}`).read(0);
        return r.messages.length > 0 && r.messages;
      },
      10_000,
      'the image message',
    );
    expect(read[0]!.media).toEqual([
      expect.objectContaining({ kind: 'image', dataUrl: `data:image/png;base64,${png.toString('base64')}` }),
    ]);
  });

  it('an encrypted event it has no key for is neither answered nor a stop (matrix-e2ee.test.ts reads real ones)', async () => {
    const room = fx.fake.createRoom([fx.owner, fx.bot], { encrypted: true });
    const gw = await fx.gateway();
    fx.fake.say(
      room,
      fx.owner,
      { algorithm: 'm.megolm.v1.aes-sha2', ciphertext: 'AwgA', session_id: 'nope', sender_key: 'x' },
      'm.room.encrypted',
    );
    fx.fake.say(room, fx.owner, { algorithm: 'm.megolm.v1.aes-sha2' }, 'm.room.encrypted');
    const dm = fx.fake.createRoom([fx.owner, fx.bot]);
    fx.fake.say(dm, fx.owner, text('marker'));
    await waitFor(async () => (await gw.mailbox(dm)).length >= 1, 10_000, 'the marker');
    expect(await gw.mailbox(room)).toEqual([]);
    expect(fx.fake.events(room).filter((e) => e.sender === fx.bot && e.type.startsWith('m.room.'))).toEqual(
      fx.fake.events(room).filter((e) => e.sender === fx.bot && e.type === 'm.room.member'),
    );
  });
});

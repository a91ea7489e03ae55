/**
 * Spoken replies on Matrix: the real MatrixChannel (matrix-js-sdk) against the
 * fake homeserver and real Redis. In a room that is not encrypted the OGG/Opus
 * (real, from espeak-ng + opusenc in the test set-up) is uploaded to the media
 * repository and sent as an `m.audio` voice message naming its mxc:// URI,
 * with info (audio/ogg, size, duration in ms from the stream) and the
 * voice-message marks; in a thread it stays in the thread; in an encrypted
 * room nothing is uploaded or sent (magpie makes no encrypted attachments).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { OutboundMessage } from '../../../src/messages/messages.js';
import { readOggOpus } from '../../../src/voice/ogg.js';
import { opusAudio } from '../../fakes/opus-audio.js';
import { BOT_TOKEN, type Gateway, type MatrixFixture, matrixFixture } from '../channels/matrix-harness.js';

let fx: MatrixFixture;
let gateway: Gateway;

beforeAll(async () => {
  fx = await matrixFixture(inject('redisUrl'));
  gateway = await fx.gateway();
}, 60_000);

afterAll(() => fx?.close());

const voice = (room: string, id: string, threadId?: string): OutboundMessage => ({
  id,
  channel: 'matrix',
  chatId: room,
  ...(threadId ? { threadId } : {}),
  content: '',
  kind: 'reply',
  media: [
    {
      kind: 'audio',
      mimeType: 'audio/ogg',
      dataUrl: `data:audio/ogg;base64,${opusAudio().toString('base64')}`,
    },
  ],
  createdAt: new Date().toISOString(),
  metadata: {},
});

const botMessages = (room: string) =>
  fx.fake
    .events(room)
    .filter((e) => e.sender === fx.bot && (e.type === 'm.room.message' || e.type === 'm.room.encrypted'));

/** The bytes behind an mxc:// URI, through the authenticated download the fake serves. */
async function download(mxc: string): Promise<{ type: string | null; bytes: Buffer }> {
  const res = await fetch(`${fx.fake.url}/_matrix/client/v1/media/download/${mxc.slice('mxc://'.length)}`, {
    headers: { authorization: `Bearer ${BOT_TOKEN}` },
  });
  expect(res.status).toBe(200);
  return { type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) };
}

describe('voice replies on matrix', () => {
  it('uploads the OGG/Opus and sends an m.audio voice message with its mimetype, size and duration', async () => {
    const room = fx.fake.createRoom([fx.owner, fx.bot]);
    await gateway.channel.send(voice(room, 'r-m1-voice'));
    const [event] = botMessages(room);
    expect(botMessages(room)).toHaveLength(1);
    expect(event?.type).toBe('m.room.message');
    const content = event?.content ?? {};
    expect(content['msgtype']).toBe('m.audio');
    expect(content['url']).toMatch(/^mxc:\/\//);
    const duration = Math.round((readOggOpus(opusAudio())?.durationSeconds ?? 0) * 1000);
    expect(duration).toBeGreaterThan(1000);
    expect(content['info']).toEqual({ mimetype: 'audio/ogg', size: opusAudio().length, duration });
    expect(content['org.matrix.msc3245.voice']).toEqual({});
    const file = await download(String(content['url']));
    expect(file.type).toBe('audio/ogg');
    expect(file.bytes.equals(opusAudio())).toBe(true);
  });

  it('keeps a thread’s voice reply in the thread', async () => {
    const room = fx.fake.createRoom([fx.owner, fx.bot]);
    const root = fx.fake.say(room, fx.owner, { msgtype: 'm.text', body: 'start a thread' });
    await gateway.channel.send(voice(room, 'r-m2-voice', root));
    const [event] = botMessages(room);
    expect(event?.content['msgtype']).toBe('m.audio');
    expect(event?.content['m.relates_to']).toMatchObject({ rel_type: 'm.thread', event_id: root });
  });

  it('sends nothing into an encrypted room', async () => {
    const room = fx.fake.createRoom([fx.owner, fx.bot], { encrypted: true });
    await gateway.channel.send(voice(room, 'r-m3-voice'));
    expect(botMessages(room)).toEqual([]);
    // And the text of a reply still goes (sealed), so the room is not simply unreachable.
    await gateway.channel.send({
      ...voice(room, 'r-m3'),
      media: undefined,
      content: 'the text answer',
    } as OutboundMessage);
    expect(botMessages(room).length).toBeGreaterThan(0);
  });
});

/**
 * The WhatsApp adapter on its webhook listener, against the fake Cloud API
 * (real Redis for access, pairing and the status store; a recording bus).
 * What every channel must do is the Channel contract
 * (test/contract/whatsapp.contract.test.ts); these are WhatsApp's own cases:
 * the signature and handshake, the body cap, redeliveries, status callbacks,
 * media, read receipts and typing, buttons and the sends' refusals.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { readDeliveryFailures } from '../../../src/bus/delivery-failures.js';
import { RedisPairingStore } from '../../../src/bus/pairing-store.js';
import { RedisWhatsAppStore } from '../../../src/bus/whatsapp-store.js';
import { WebhookListener } from '../../../src/channels/webhooks.js';
import { WhatsAppChannel, type WhatsAppChannelOptions } from '../../../src/channels/whatsapp/index.js';
import { silentLogger } from '../../../src/log/index.js';
import type { OutboundMessage } from '../../../src/messages/messages.js';
import { closedPort } from '../../fakes/net.js';
import { waitFor } from '../../fakes/wait-for.js';
import { type FakeWhatsApp, startFakeWhatsApp } from '../../fakes/whatsapp-server.js';
import { RecordingBus } from './discord-harness.js';

const redisUrl = inject('redisUrl');
const OWNER = '491701234567';
const STRANGER = '447700900123';
const APP_SECRET = 'integration-app-secret';
const VERIFY_TOKEN = 'integration-verify-token';

interface Harness {
  fake: FakeWhatsApp;
  channel: WhatsAppChannel;
  bus: RecordingBus;
  store: RedisWhatsAppStore;
  redis: Redis;
  prefix: string;
  listener: WebhookListener;
  close(): Promise<void>;
}

let harness: Harness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function start(
  options: { env?: Record<string, string>; channel?: WhatsAppChannelOptions } = {},
): Promise<Harness> {
  const port = await closedPort();
  const fake = await startFakeWhatsApp({
    token: 'EAAG-integration-token',
    appSecret: APP_SECRET,
    webhookUrl: `http://127.0.0.1:${port}/webhooks/whatsapp`,
  });
  const prefix = `test-${randomUUID()}`;
  const config = parseConfig({
    WHATSAPP_ACCESS_TOKEN: fake.token,
    WHATSAPP_PHONE_NUMBER_ID: fake.phoneNumberId,
    WHATSAPP_APP_SECRET: APP_SECRET,
    WHATSAPP_VERIFY_TOKEN: VERIFY_TOKEN,
    WHATSAPP_API_ROOT: fake.apiRoot,
    WHATSAPP_ALLOW_FROM: `+${OWNER.slice(0, 2)} ${OWNER.slice(2, 5)} ${OWNER.slice(5)}`,
    MAGPIE_WEBHOOK_PORT: String(port),
    MAGPIE_QUEUE_PREFIX: prefix,
    REDIS_URL: redisUrl,
    ...options.env,
  });
  const redis = new Redis(redisUrl);
  const bus = new RecordingBus();
  const store = new RedisWhatsAppStore(redis, prefix);
  const listener = new WebhookListener({ port, logger: silentLogger() });
  const channel = new WhatsAppChannel(
    { config, bus, logger: silentLogger(), pairing: new RedisPairingStore(redis, prefix) },
    { store, webhooks: listener },
    { typingIntervalMs: 100, ...options.channel },
  );
  await channel.start();
  await listener.listen();
  return {
    fake,
    channel,
    bus,
    store,
    redis,
    prefix,
    listener,
    async close() {
      await listener.close();
      await channel.stop();
      await fake.close();
      redis.disconnect();
    },
  };
}

function reply(chatId: string, content: string, extra: Partial<OutboundMessage> = {}): OutboundMessage {
  return {
    id: `r-${randomUUID()}`,
    channel: 'whatsapp',
    chatId,
    content,
    kind: 'reply',
    createdAt: new Date().toISOString(),
    metadata: {},
    ...extra,
  };
}

describe('whatsapp webhooks: who may post', () => {
  it('refuses every POST without a valid signature over its exact bytes with 401, and publishes nothing', async () => {
    harness = await start();
    const { fake, bus } = harness;
    const body = Buffer.from(JSON.stringify(fake.messageNotification({ from: OWNER, text: 'forged' })));
    const changed = Buffer.from(body);
    changed[body.indexOf('forged')] = 'F'.charCodeAt(0);
    const other = Buffer.from(JSON.stringify(fake.messageNotification({ from: OWNER, text: 'other' })));
    const hex = fake.sign(body).slice('sha256='.length);
    const refused = [
      await fake.post(body, { signature: null }), // no header
      await fake.post(body, { signature: '' }),
      await fake.post(body, { signature: fake.sign(other) }), // a signature of another body
      await fake.post(body, { signature: `sha1=${hex}` }), // another prefix
      await fake.post(body, { signature: hex }), // no prefix
      await fake.post(body, { signature: `sha256=${hex.slice(0, -2)}` }), // cut short
      await fake.post(body, { signature: `sha256=${hex}, sha256=${hex}` }),
      await fake.post(body, { signature: fake.sign(body, 'another-app-secret') }), // another app's secret
      await fake.post(changed, { signature: fake.sign(body) }), // a signed body replayed with one byte changed
    ];
    expect(refused.map((p) => p.status)).toEqual(Array(refused.length).fill(401));
    expect(bus.attempts).toBe(0);
    expect(fake.sent).toEqual([]);
    // The same bytes, signed: taken.
    expect((await fake.post(body)).status).toBe(200);
    expect(bus.published.map((m) => m.content)).toEqual(['forged']);
  });

  it('answers the subscription handshake only with the verify token', async () => {
    harness = await start();
    const { fake } = harness;
    const handshake = { 'hub.mode': 'subscribe', 'hub.challenge': '1158201444' };
    expect(await fake.get({ ...handshake, 'hub.verify_token': VERIFY_TOKEN })).toEqual({
      status: 200,
      text: '1158201444',
    });
    expect((await fake.get({ ...handshake, 'hub.verify_token': 'guess' })).status).toBe(403);
    expect((await fake.get({ ...handshake, 'hub.verify_token': `${VERIFY_TOKEN}x` })).status).toBe(403);
    expect((await fake.get({ 'hub.challenge': '1', 'hub.verify_token': VERIFY_TOKEN })).status).toBe(403);
    expect(
      (await fake.get({ 'hub.mode': 'unsubscribe', 'hub.challenge': '1', 'hub.verify_token': VERIFY_TOKEN }))
        .status,
    ).toBe(403);
  });

  it('refuses a body over the cap with 413 and malformed JSON with 400; nothing published', async () => {
    harness = await start({ channel: { maxBodyBytes: 4096 } });
    const { fake, bus } = harness;
    const big = fake.messageNotification({ from: OWNER, text: 'x'.repeat(5000) });
    expect((await fake.post(big)).status).toBe(413);
    // Chunked, so no length announces it: cut off once past the cap.
    const bytes = Buffer.from(JSON.stringify(big));
    const chunked = await fetch(fake.webhookUrl!, {
      method: 'POST',
      headers: { 'x-hub-signature-256': fake.sign(bytes) },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(bytes.subarray(0, 3000));
          controller.enqueue(bytes.subarray(3000));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    const notJson = Buffer.from('{"object": "whatsapp_business_account", ');
    expect((await fake.post(notJson)).status).toBe(400);
    expect((await fake.post(Buffer.from('[]'))).status).toBe(400);
    expect(bus.attempts).toBe(0);
    // Other paths are not served; other methods are refused.
    expect((await fetch(fake.webhookUrl!.replace('/whatsapp', '/other'))).status).toBe(404);
    expect((await fetch(fake.webhookUrl!, { method: 'PUT' })).status).toBe(405);
  });
});

describe('whatsapp webhooks: what they carry', () => {
  it('publishes a text, marks it read, takes a redelivery once and answers both 200', async () => {
    harness = await start();
    const { fake, bus } = harness;
    const first = await fake.deliverMessage({ from: OWNER, name: 'Ada', text: 'hello magpie' });
    expect(first.status).toBe(200);
    expect(bus.published).toEqual([
      expect.objectContaining({
        id: `whatsapp:${OWNER}:${first.messageId}`,
        channel: 'whatsapp',
        chatId: OWNER,
        senderId: OWNER,
        senderName: 'Ada',
        content: 'hello magpie',
        platformMessageId: first.messageId,
        isGroup: false,
        media: [],
      }),
    ]);
    await fake.waitFor(() => fake.reads.some((r) => r.messageId === first.messageId && !r.typing));
    // Meta's redelivery: the same bytes, answered 200 and not taken again.
    expect((await fake.post(first.body)).status).toBe(200);
    expect(bus.published).toHaveLength(1);
  });

  it('records status callbacks without answering them; a failed one once, among the delivery failures', async () => {
    harness = await start();
    const { fake, bus, store, redis, prefix } = harness;
    const messageId = fake.newMessageId();
    for (const status of ['sent', 'delivered', 'read'] as const) {
      expect((await fake.post(fake.statusNotification({ messageId, recipient: OWNER, status }))).status).toBe(
        200,
      );
    }
    expect(Object.keys(await store.statuses(messageId)).sort()).toEqual(['delivered', 'read', 'sent']);
    const failedId = fake.newMessageId();
    const failed = fake.statusNotification({
      messageId: failedId,
      recipient: OWNER,
      status: 'failed',
      errors: [{ code: 131047, title: 'Re-engagement message', details: 'more than 24 hours have passed' }],
    });
    expect((await fake.post(failed)).status).toBe(200);
    expect((await fake.post(failed)).status).toBe(200);
    const failures = await readDeliveryFailures(redis, prefix);
    expect(failures).toEqual([
      expect.objectContaining({
        channel: 'whatsapp',
        chatId: OWNER,
        messageId: failedId,
        reason: expect.stringContaining('24-hour window is closed (131047)'),
      }),
    ]);
    expect(await store.counts()).toEqual({ sent: 1, delivered: 1, read: 1, failed: 1 });
    // Not messages: nothing published, nothing sent back.
    expect(bus.attempts).toBe(0);
    expect(fake.sent).toEqual([]);
  });

  it('ignores a notification for another phone number id (answered 200)', async () => {
    harness = await start();
    const { fake, bus } = harness;
    const post = await fake.deliverMessage({ from: OWNER, text: 'not for us', phoneNumberId: '999' });
    expect(post.status).toBe(200);
    expect(bus.attempts).toBe(0);
  });

  it('hands on an image (to vision models) and a voice note (to transcription), downloaded with the token', async () => {
    harness = await start();
    const { fake, bus } = harness;
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    const ogg = Buffer.from('OggS-voice-bytes');
    const image = fake.addMedia(png, 'image/png');
    const voice = fake.addMedia(ogg, 'audio/ogg; codecs=opus');
    await fake.deliverMessage({
      from: OWNER,
      image: { mediaId: image, mimeType: 'image/png', caption: 'what is this?' },
    });
    await fake.deliverMessage({ from: OWNER, audio: { mediaId: voice } });
    expect(bus.published.map((m) => m.content)).toEqual(['what is this?', '']);
    expect(bus.published[0]!.media).toEqual([
      expect.objectContaining({
        kind: 'image',
        mimeType: 'image/png',
        dataUrl: `data:image/png;base64,${png.toString('base64')}`,
      }),
    ]);
    expect(bus.published[1]!.media).toEqual([
      expect.objectContaining({
        kind: 'audio',
        mimeType: 'audio/ogg',
        dataUrl: `data:audio/ogg;base64,${ogg.toString('base64')}`,
      }),
    ]);
    expect(fake.downloads).toEqual([
      { mediaId: image, authorized: true },
      { mediaId: voice, authorized: true },
    ]);
  });

  it('notes an image over MAGPIE_MAX_MEDIA_BYTES instead of downloading it', async () => {
    harness = await start({ env: { MAGPIE_MAX_MEDIA_BYTES: '10' } });
    const { fake, bus } = harness;
    const image = fake.addMedia(Buffer.alloc(100, 1), 'image/jpeg');
    await fake.deliverMessage({ from: OWNER, image: { mediaId: image } });
    expect(bus.published[0]!.media).toEqual([
      expect.objectContaining({ kind: 'image', note: expect.stringContaining('too large') }),
    ]);
    expect(bus.published[0]!.media?.[0]?.dataUrl).toBeUndefined();
    expect(fake.downloads).toEqual([]);
  });

  it("keeps one sender's messages in order while an image downloads", async () => {
    harness = await start();
    const { fake, bus } = harness;
    const image = fake.addMedia(Buffer.alloc(64, 7), 'image/jpeg');
    const photo = fake.post(fake.messageNotification({ from: OWNER, image: { mediaId: image } }));
    const question = fake.post(fake.messageNotification({ from: OWNER, text: 'and what is that?' }));
    expect((await Promise.all([photo, question])).map((p) => p.status)).toEqual([200, 200]);
    expect(bus.published.map((m) => (m.media?.length ? 'photo' : m.content))).toEqual([
      'photo',
      'and what is that?',
    ]);
  });

  it('gives a stranger a pairing code (not marked read) and publishes nothing', async () => {
    harness = await start();
    const { fake, bus } = harness;
    const post = await fake.deliverMessage({ from: STRANGER, text: 'who are you?' });
    expect(post.status).toBe(200);
    expect(fake.shown(STRANGER)).toEqual([expect.stringMatching(/magpie pairing approve [A-Z2-9]{6}$/)]);
    expect(bus.published).toEqual([]);
    expect(fake.reads).toEqual([]);
  });

  it('reads a reply button as a press from its presser; a stranger’s press publishes nothing', async () => {
    harness = await start();
    const { fake, bus } = harness;
    const question = fake.newMessageId();
    const press = (from: string) =>
      fake.post(
        fake.messageNotification({
          from,
          buttonReply: { id: '/approve K7QF2', title: 'Allow once', contextId: question },
        }),
      );
    expect((await press(STRANGER)).status).toBe(200);
    expect(bus.attempts).toBe(0);
    expect((await press(OWNER)).status).toBe(200);
    // An at-once command: answered here (no question waits on this bus), not published.
    expect(bus.answers).toEqual([
      expect.objectContaining({
        sessionKey: `whatsapp:${OWNER}`,
        answer: expect.objectContaining({ code: 'K7QF2', decision: 'allow' }),
      }),
    ]);
    expect(fake.shown(OWNER)).toEqual(['No question K7QF2 is waiting in this chat.']);
  });
});

describe('whatsapp: typing and sends', () => {
  it('shows typing on the last message while a turn runs, and stops with the reply', async () => {
    harness = await start();
    const { fake, channel } = harness;
    const { messageId } = await fake.deliverMessage({ from: OWNER, text: 'think' });
    channel.startActivity(OWNER);
    await fake.waitFor(() => fake.typing(OWNER) >= 2);
    expect(fake.reads.filter((r) => r.typing).every((r) => r.messageId === messageId)).toBe(true);
    await channel.send(reply(OWNER, 'done'));
    const typed = fake.typing(OWNER);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(fake.typing(OWNER)).toBe(typed);
  });

  it('sends Markdown as WhatsApp formatting, a long reply in parts under 4,096, buttons as reply buttons', async () => {
    harness = await start();
    const { fake, channel } = harness;
    await channel.send(reply(OWNER, '**Bold**, _it_, ~~gone~~ and `code`; see [docs](https://example.com)'));
    expect(fake.shown(OWNER)).toEqual(['*Bold*, _it_, ~gone~ and `code`; see docs (https://example.com)']);
    const long = `${'Words in a long answer. '.repeat(400)}`;
    await channel.send(reply(OWNER, long));
    const parts = fake.shown(OWNER).slice(1);
    expect(parts.length).toBe(3);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(4096);
    await channel.send(
      reply(OWNER, `${'A long question. '.repeat(100)}Allow it?`, {
        actions: [
          { label: 'Allow once', command: '/approve K7QF2' },
          { label: 'Always allow git push origin main', command: '/approve K7QF2 always' },
          { label: 'Deny', command: '/deny K7QF2' },
        ],
      }),
    );
    const [text, buttons] = fake.messages(OWNER).slice(4);
    expect(text).toMatchObject({ type: 'text' });
    expect(buttons).toMatchObject({ type: 'interactive' });
    expect(buttons!.text.length).toBeLessThanOrEqual(1024);
    expect(buttons!.text.endsWith('Allow it?')).toBe(true);
    expect(buttons!.buttons).toEqual([
      { id: '/approve K7QF2', title: 'Allow once' },
      { id: '/approve K7QF2 always', title: 'Always allow git pu…' },
      { id: '/deny K7QF2', title: 'Deny' },
    ]);
  });

  it('fails a send outside the 24-hour window for good (131047); retries what may pass, resuming after the parts sent', async () => {
    harness = await start();
    const { fake, channel } = harness;
    fake.closeWindow(OWNER);
    await expect(channel.send(reply(OWNER, 'too late'))).rejects.toMatchObject({
      code: 'DELIVERY_PERMANENT',
      message: expect.stringContaining('24-hour window is closed (131047)'),
    });
    // Writing again opens it.
    await fake.deliverMessage({ from: OWNER, text: 'back' });
    const message = reply(
      OWNER,
      `${'First part words. '.repeat(300)}\n\n${'Second part words. '.repeat(100)}`,
    );
    // The second part fails: the retry sends only it.
    fake.failNext({ status: 500, code: 131000, message: 'Something went wrong' }, 1);
    await expect(channel.send(message)).rejects.toMatchObject({ code: 'DELIVERY_TRANSIENT' });
    await channel.send(message);
    fake.failNext({ status: 400, code: 130429, message: 'Rate limit hit' });
    const second = reply(OWNER, 'short');
    await expect(channel.send(second)).rejects.toMatchObject({ code: 'DELIVERY_TRANSIENT' });
    fake.failNext({ status: 400, code: 100, message: 'Invalid parameter' });
    await expect(channel.send(second)).rejects.toMatchObject({ code: 'DELIVERY_PERMANENT' });
    await waitFor(() => fake.shown(OWNER).length === 2);
    expect(fake.shown(OWNER)[0]).toMatch(/^First part words\./);
    expect(fake.shown(OWNER)[1]).toMatch(/Second part words\.$/);
  });

  it('refuses to start on a token Meta refuses', async () => {
    harness = await start();
    const { fake } = harness;
    const config = parseConfig({
      WHATSAPP_ACCESS_TOKEN: 'wrong',
      WHATSAPP_PHONE_NUMBER_ID: fake.phoneNumberId,
      WHATSAPP_APP_SECRET: APP_SECRET,
      WHATSAPP_VERIFY_TOKEN: VERIFY_TOKEN,
      WHATSAPP_API_ROOT: fake.apiRoot,
    });
    const listener = new WebhookListener({ port: await closedPort(), logger: silentLogger() });
    const channel = new WhatsAppChannel(
      {
        config,
        bus: new RecordingBus(),
        logger: silentLogger(),
        pairing: new RedisPairingStore(harness.redis, harness.prefix),
      },
      { store: harness.store, webhooks: listener },
    );
    await expect(channel.start()).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining('check WHATSAPP_ACCESS_TOKEN'),
    });
    expect(listener.paths()).toEqual([]);
  });
});

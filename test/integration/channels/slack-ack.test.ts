/**
 * The Slack adapter acknowledges a Socket Mode envelope only once the message
 * is on the bus: while publishing fails (Redis away) the envelope stays
 * unacknowledged, Slack's retry of it is published and acknowledged, and a
 * further retry is acknowledged without publishing again.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, expect, inject, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { RedisPairingStore } from '../../../src/bus/pairing-store.js';
import { SlackChannel } from '../../../src/channels/slack/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { type FakeSlack, startFakeSlack } from '../../fakes/slack-server.js';
import { RecordingBus } from './discord-harness.js';

let fake: FakeSlack;
let redis: Redis;
let channel: SlackChannel;
let bus: RecordingBus;
const owner = 'UOWNER1';

beforeEach(async () => {
  fake = await startFakeSlack({ botToken: 'xoxb-ack', appToken: 'xapp-ack' });
  fake.addUser({ id: owner, name: 'owner' });
  const prefix = `test-${randomUUID()}`;
  redis = new Redis(inject('redisUrl'));
  bus = new RecordingBus();
  const config = parseConfig({
    SLACK_BOT_TOKEN: 'xoxb-ack',
    SLACK_APP_TOKEN: 'xapp-ack',
    SLACK_API_ROOT: fake.apiRoot,
    SLACK_ALLOW_FROM: owner,
    MAGPIE_QUEUE_PREFIX: prefix,
    REDIS_URL: inject('redisUrl'),
  });
  channel = new SlackChannel({
    config,
    bus,
    logger: silentLogger(),
    pairing: new RedisPairingStore(redis, prefix),
  });
  await channel.start();
});

afterEach(async () => {
  await channel.stop();
  await fake.close();
  redis.disconnect();
});

const envelope = (id: string) => fake.envelopes.find((e) => e.envelopeId === id);

it('leaves an envelope unacknowledged while the bus refuses it; the retry is taken, a further retry not again', async () => {
  bus.failing = true;
  const dm = fake.newId('D');
  const { envelopeId, ts } = fake.deliverMessage({ channel: dm, user: owner, text: 'keep me' });
  await fake.waitFor(() => bus.attempts >= 1);
  // A later envelope is handled after the first: once it is acknowledged, the first was decided.
  const other = fake.deliverMessage({ channel: fake.newId('D'), user: 'UNOBODY', text: 'ignored stranger' });
  await fake.waitFor(() => envelope(other.envelopeId)?.acked === true);
  expect(envelope(envelopeId)?.acked).toBe(false);
  expect(bus.published).toEqual([]);

  bus.failing = false;
  const retry = fake.redeliver(envelopeId);
  await fake.waitFor(() => envelope(retry)?.acked === true);
  expect(bus.published.map((m) => m.id)).toEqual([`slack:${dm}:${ts}`]);

  const again = fake.redeliver(retry);
  await fake.waitFor(() => envelope(again)?.acked === true);
  expect(bus.published).toHaveLength(1);
});

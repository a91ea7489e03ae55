/**
 * WhatsApp end to end: the fake Cloud API's signed webhooks → the gateway's
 * webhook listener → real adapter → real Bus on a private redis-server →
 * real turn worker and agent → fake OpenAI → outbound queue → adapter →
 * fake Graph API, in the role `magpie start` runs. WhatsApp's own cases over
 * the whole stack: while Redis is down a POST is refused (503) and nothing
 * is taken; Meta's redelivery once it is back is answered exactly once, and
 * again after a restart of magpie; a send refused because the 24-hour
 * window is closed fails at once and shows in `magpie status`, as does a
 * failed status callback.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import type { Config } from '../../../src/config/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { collectStatus } from '../../../src/ops/status.js';
import { formatStatus } from '../../../src/ops/status-format.js';
import { roleConfig } from '../../fakes/config.js';
import { closedPort } from '../../fakes/net.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { type RedisHandle, startRedis } from '../../fakes/redis-server.js';
import { waitFor } from '../../fakes/wait-for.js';
import { type FakeWhatsApp, startFakeWhatsApp } from '../../fakes/whatsapp-server.js';

const OWNER = '491701234567';
let fake: FakeWhatsApp;
let openai: FakeOpenAI;
let redis: RedisHandle;
let redisDir: string;
let role: RunningRole | undefined;
let config: Config;
let workspace: string;

beforeAll(async () => {
  redisDir = mkdtempSync(path.join(os.tmpdir(), 'magpie-whatsapp-redis-'));
  redis = await startRedis({ dir: redisDir });
  const port = await closedPort();
  fake = await startFakeWhatsApp({
    token: 'EAAG-e2e-whatsapp',
    appSecret: 'e2e-app-secret',
    webhookUrl: `http://127.0.0.1:${port}/webhooks/whatsapp`,
  });
  openai = await startFakeOpenAI({
    responder: (req) => ({ content: `echo: ${lastUserText(req).slice(-40)}` }),
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-whatsapp-e2e-'));
  config = roleConfig(
    { workspace, openai, prefix: `test-${randomUUID()}`, redisUrl: redis.url },
    {
      WHATSAPP_ACCESS_TOKEN: fake.token,
      WHATSAPP_PHONE_NUMBER_ID: fake.phoneNumberId,
      WHATSAPP_APP_SECRET: fake.appSecret,
      WHATSAPP_VERIFY_TOKEN: 'e2e-verify',
      WHATSAPP_API_ROOT: fake.apiRoot,
      WHATSAPP_ALLOW_FROM: `+${OWNER}`,
      MAGPIE_WEBHOOK_PORT: String(port),
    },
  );
  role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 2 });
}, 60_000);

afterAll(async () => {
  await role?.stop();
  await fake?.close();
  await openai?.close();
  await redis?.stop();
  rmSync(workspace, { recursive: true, force: true });
  rmSync(redisDir, { recursive: true, force: true });
});

const running = (): RunningRole => {
  if (!role) throw new TypeError('magpie is not running');
  return role;
};

const status = async () =>
  collectStatus({
    reader: running().bus.opsReader,
    url: running().bus.url,
    prefix: running().bus.prefix,
    workspace,
    errors: 10,
  });

describe('whatsapp through the bus', () => {
  it('answers 503 while Redis is down and takes nothing; the redelivery is answered once, also after a restart', async () => {
    const from = '491701234567';
    await redis.stop();
    const first = await fake.deliverMessage({ from, text: 'while redis is away' });
    expect(first.status).toBe(503);

    redis = await startRedis({ dir: redisDir, port: redis.port });
    await waitFor(() => running().bus.redis.status === 'ready', 15_000, 'the gateway reconnected');
    // Meta delivers the refused POST again, byte for byte.
    expect((await fake.post(first.body)).status).toBe(200);
    await fake.waitFor(() => fake.shown(from).length === 1, 30_000);
    expect(fake.shown(from)[0]).toContain('while redis is away');

    // A later redelivery (Meta did not see the 200): taken once, even by a magpie restarted since.
    expect((await fake.post(first.body)).status).toBe(200);
    await running().stop();
    role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 2 });
    expect((await fake.post(first.body)).status).toBe(200);
    const marker = await fake.deliverMessage({ from, text: 'marker after the restart' });
    expect(marker.status).toBe(200);
    await fake.waitFor(() => fake.shown(from).length >= 2, 30_000);
    expect(fake.shown(from)).toEqual([
      expect.stringContaining('while redis is away'),
      expect.stringContaining('marker after the restart'),
    ]);
    expect(openai.requests.map(lastUserText).filter((t) => t.includes('while redis is away'))).toHaveLength(
      1,
    );
  }, 90_000);

  it('fails a send outside the 24-hour window at once (no retries) and shows it in magpie status', async () => {
    const to = '491709999999';
    fake.closeWindow(to);
    const attempts = () => fake.calls.filter((c) => c.body['to'] === to).length;
    await running().bus.publishOutbound({
      id: `m-${randomUUID()}`,
      channel: 'whatsapp',
      chatId: to,
      content: 'reminder',
    });
    const line = await waitFor(
      async () => (await status()).errors.find((e) => e.message.includes('24-hour window')),
      20_000,
      'the refused send in status',
    );
    expect(line.source).toMatch(/^outbound-whatsapp job /);
    expect(line.message).toContain(`+${to}`);
    expect(attempts()).toBe(1);
    expect(fake.shown(to)).toEqual([]);
  });

  it('records status callbacks without answering them; a failed one shows in magpie status', async () => {
    const sentBefore = fake.sent.length;
    const inboundBefore = openai.requests.length;
    const messageId = fake.newMessageId();
    for (const s of ['sent', 'delivered'] as const)
      expect(
        (await fake.post(fake.statusNotification({ messageId, recipient: OWNER, status: s }))).status,
      ).toBe(200);
    const failed = fake.statusNotification({
      messageId,
      recipient: OWNER,
      status: 'failed',
      errors: [{ code: 131026, title: 'Message undeliverable' }],
    });
    expect((await fake.post(failed)).status).toBe(200);
    const report = await status();
    const line = report.errors.find((e) => e.source === `whatsapp delivery to ${OWNER}`);
    expect(line?.message).toContain('Message undeliverable (131026)');
    expect(formatStatus(report)).toContain(`whatsapp delivery to ${OWNER}: Message undeliverable (131026)`);
    expect(await running().bus.whatsappStore().statuses(messageId)).toEqual({
      sent: expect.any(Number),
      delivered: expect.any(Number),
      failed: expect.any(Number),
    });
    expect(fake.sent.length).toBe(sentBefore);
    expect(openai.requests.length).toBe(inboundBefore);
  });
});

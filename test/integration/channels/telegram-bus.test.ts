/**
 * Telegram end to end: fake Bot API → real adapter (telegraf) → real Bus (Redis)
 * → real turn worker and agent → fake OpenAI → outbound queue → adapter → fake
 * Bot API. The role is the same one `magpie start` runs.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { approvePairing } from '../../../src/bus/pairing-store.js';
import { parseConfig } from '../../../src/config/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { type RunningRole, startRole } from '../../../src/main.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import {
  dmUpdate,
  type FakeTelegram,
  groupUpdate,
  mentioning,
  startFakeTelegram,
} from '../../fakes/telegram-server.js';

const CODE = Array.from({ length: 110 }, (_, i) => `let value${i} = ${i} < 50 && flag; // line ${i}`).join(
  '\n',
);
const LONG_REPLY = `${'Intro **words** here. '.repeat(120)}\n\n\`\`\`js\n${CODE}\n\`\`\`\n\n${'Outro words. '.repeat(100)}`;

let fake: FakeTelegram;
let openai: FakeOpenAI;
let role: RunningRole | undefined;
let workspace: string;
let prefix: string;
const owner = { id: 5001, first_name: 'Owner', username: 'owner' };
let queuedBeforeStart: number;

beforeAll(async () => {
  fake = await startFakeTelegram({ token: '777:e2e-telegram-token' });
  openai = await startFakeOpenAI({
    responder: (req) => {
      const text = lastUserText(req);
      if (text.includes('long please')) return { content: LONG_REPLY };
      if (text.includes('slowly')) return { content: 'slow answer', delayMs: 4500 };
      if (text.includes('markdown please')) return { content: 'Some **bold** text' };
      return { content: `echo: ${text.slice(-40)}` };
    },
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-telegram-e2e-'));
  prefix = `test-${randomUUID()}`;
  // Sent while the bot is down: must be answered once it starts.
  queuedBeforeStart = fake.pushUpdate(dmUpdate({ ...owner, id: 5002 }, 'sent while you were away'));
  const config = parseConfig({
    REDIS_URL: inject('redisUrl'),
    MAGPIE_QUEUE_PREFIX: prefix,
    MAGPIE_WORKSPACE: workspace,
    OPENAI_API_KEY: 'test-key',
    OPENAI_BASE_URL: openai.baseURL,
    MAGPIE_MODEL: 'fake-model',
    MAGPIE_HEARTBEAT_INTERVAL: '0',
    TELEGRAM_BOT_TOKEN: fake.token,
    TELEGRAM_API_ROOT: fake.apiRoot,
    TELEGRAM_ALLOW_FROM: `@${owner.username}`,
  });
  role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 4 });
}, 60_000);

afterAll(async () => {
  await role?.stop();
  await fake?.close();
  await openai?.close();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

describe('telegram through the bus', () => {
  it('answers an update that was sent while the bot was stopped', async () => {
    expect(queuedBeforeStart).toBeGreaterThan(0);
    await fake.waitFor(() => fake.sent(5002).length === 1, 20_000);
    expect(fake.sent(5002)[0]!.text).toContain('sent while you were away');
    expect(fake.pendingUpdates()).toBe(0);
  });

  it('answers a DM', async () => {
    fake.pushUpdate(dmUpdate(owner, 'hello there'));
    await fake.waitFor(() => fake.sent(owner.id).some((m) => m.text.includes('hello there')), 20_000);
    expect(fake.sent(owner.id).at(-1)).toMatchObject({ parse_mode: 'HTML' });
  });

  it('splits a 6,000-character model reply with a code block into valid parts under 4096, in order', async () => {
    expect(LONG_REPLY.length).toBeGreaterThan(6000);
    const chat = { ...owner, id: 5003 };
    fake.pushUpdate(dmUpdate(chat, 'long please'));
    await fake.waitFor(() => fake.sent(chat.id).some((m) => m.text.includes('Outro')), 20_000);
    const parts = fake.sent(chat.id);
    expect(parts.length).toBeGreaterThanOrEqual(2);
    for (const part of parts) {
      expect(part.text.length).toBeLessThan(4096);
      expect(part.parse_mode).toBe('HTML'); // the fake refused any unbalanced or unknown tag
    }
    const codeParts = parts.filter((p) => p.text.includes('let value'));
    expect(codeParts.length).toBeGreaterThanOrEqual(2);
    for (const p of codeParts) expect(p.text).toContain('<pre><code class="language-js">');
    const lines = parts
      .map((p) => p.text.replace(/<[^>]+>/g, '\n'))
      .join('\n')
      .split('\n')
      .filter((l) => l.startsWith('let value'));
    expect(lines).toEqual(CODE.replace(/&/g, '&amp;').replace(/</g, '&lt;').split('\n'));
  });

  it('ignores a group message without a mention and answers one with it, mention stripped', async () => {
    const before = openai.requests.length;
    fake.pushUpdate(groupUpdate(-2001, owner, 'no mention here'));
    fake.pushUpdate(
      groupUpdate(-2001, owner, '', { ...mentioning(fake.bot.username, 'mentioned question') }),
    );
    await fake.waitFor(() => fake.sent(-2001).length === 1, 20_000);
    const seen = openai.requests.slice(before).map(lastUserText).join('\n');
    expect(seen).toContain('mentioned question');
    expect(seen).not.toContain(`@${fake.bot.username}`);
    expect(seen).not.toContain('no mention here');
  });

  it('gives an unknown DM sender a pairing code, then answers after approval', async () => {
    const stranger = { id: 6001, first_name: 'New', username: 'newcomer' };
    fake.pushUpdate(dmUpdate(stranger, 'let me in'));
    await fake.waitFor(() => fake.sent(stranger.id).length === 1, 20_000);
    const code = /approve ([A-Z2-9]{6})$/.exec(fake.sent(stranger.id)[0]!.text)?.[1];
    expect(code).toBeDefined();
    expect(await approvePairing(role!.bus.redis, prefix, code!)).toMatchObject({ senderId: '6001' });
    fake.pushUpdate(dmUpdate(stranger, 'now hello'));
    await fake.waitFor(() => fake.sent(stranger.id).length === 2, 20_000);
    expect(fake.sent(stranger.id)[1]!.text).toContain('now hello');
  });

  it('waits out a 429 and delivers the reply once', async () => {
    const chat = { ...owner, id: 5004 };
    fake.failNext('sendMessage', {
      error_code: 429,
      description: 'Too Many Requests',
      parameters: { retry_after: 1 },
    });
    fake.pushUpdate(dmUpdate(chat, 'rate limited'));
    await fake.waitFor(() => fake.sent(chat.id).length === 1, 20_000);
    const attempts = fake.calls.filter(
      (c) => c.method === 'sendMessage' && String(c.params.chat_id) === '5004',
    );
    expect(attempts).toHaveLength(2);
    expect(fake.sent(chat.id)[0]!.text).toContain('rate limited');
  });

  it('sends plain text when Telegram rejects the HTML', async () => {
    const chat = { ...owner, id: 5005 };
    fake.failNext('sendMessage', {
      error_code: 400,
      description: "Bad Request: can't parse entities: bad tag",
    });
    fake.pushUpdate(dmUpdate(chat, 'markdown please'));
    await fake.waitFor(() => fake.sent(chat.id).length === 1, 20_000);
    expect(fake.sent(chat.id)[0]).toEqual(expect.objectContaining({ text: 'Some **bold** text' }));
    expect(fake.sent(chat.id)[0]!.parse_mode).toBeUndefined();
  });

  it('shows typing during a slow turn', async () => {
    const chat = { ...owner, id: 5006 };
    const typing = () =>
      fake.calls.filter((c) => c.method === 'sendChatAction' && String(c.params.chat_id) === String(chat.id));
    fake.pushUpdate(dmUpdate(chat, 'answer slowly'));
    await fake.waitFor(() => fake.sent(chat.id).length === 1, 20_000);
    const reply = fake.calls.find((c) => c.method === 'sendMessage' && String(c.params.chat_id) === '5006')!;
    expect(typing().length).toBeGreaterThanOrEqual(2);
    expect(typing()[0]!.params.action).toBe('typing');
    expect(typing()[0]!.at).toBeLessThan(reply.at);
    expect(fake.sent(chat.id)[0]!.text).toBe('slow answer');
  });

  it('passes a photo to the model as an image part', async () => {
    const jpeg = Buffer.from('ffd8ffe000104a46494600010100000100010000ffd9', 'hex');
    fake.addFile('photo-e2e', jpeg);
    const chat = { ...owner, id: 5007 };
    const before = openai.requests.length;
    fake.pushUpdate(
      dmUpdate(chat, '', {
        text: undefined,
        caption: 'what is in this picture?',
        photo: [{ file_id: 'photo-e2e', file_unique_id: 'p', width: 64, height: 64, file_size: jpeg.length }],
      }),
    );
    await fake.waitFor(() => fake.sent(chat.id).length === 1, 20_000);
    const body = JSON.stringify(openai.requests.slice(before).map((r) => r.body.messages));
    expect(body).toContain('image_url');
    expect(body).toContain(`data:image/jpeg;base64,${jpeg.toString('base64')}`);
    expect(body).toContain('what is in this picture?');
  });
});

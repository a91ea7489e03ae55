/**
 * Telegram end to end: fake Bot API → real adapter (telegraf) → real Bus (Redis)
 * → real turn worker and agent → fake OpenAI → outbound queue → adapter → fake
 * Bot API. The role is the same one `magpie start` runs. What every channel
 * must do (answer, split, groups, pairing, /stop, typing, redelivery) is the
 * Channel contract (test/contract); these are Telegram's own cases.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { silentLogger } from '../../../src/log/index.js';
import { LONG_REPLY } from '../../contract/harness.js';
import { roleConfig, telegramEnv } from '../../fakes/config.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { stopRoleAndFakes } from '../../fakes/role.js';
import { dmUpdate, type FakeTelegram, startFakeTelegram } from '../../fakes/telegram-server.js';

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
      if (text.includes('markdown please')) return { content: 'Some **bold** text' };
      if (text.includes('long please')) return { content: LONG_REPLY };
      return { content: `echo: ${text.slice(-40)}` };
    },
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-telegram-e2e-'));
  prefix = `test-${randomUUID()}`;
  // Sent while the bot is down: must be answered once it starts.
  queuedBeforeStart = fake.pushUpdate(dmUpdate({ ...owner, id: 5002 }, 'sent while you were away'));
  const config = roleConfig({ workspace, openai, prefix }, telegramEnv(fake, `@${owner.username}`));
  role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 4 });
}, 60_000);

afterAll(() => stopRoleAndFakes(role, [fake, openai], workspace));

describe('telegram through the bus', () => {
  it('answers an update that was sent while the bot was stopped', async () => {
    expect(queuedBeforeStart).toBeGreaterThan(0);
    await fake.waitFor(() => fake.sent(5002).length === 1, 20_000);
    expect(fake.sent(5002)[0]!.text).toContain('sent while you were away');
    expect(fake.pendingUpdates()).toBe(0);
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

  it('sends a reply as Telegram HTML, and plain text when Telegram rejects the HTML', async () => {
    const formatted = { ...owner, id: 5008 };
    fake.pushUpdate(dmUpdate(formatted, 'markdown please'));
    // What the chat finally shows (a live preview, if one was shown, ends in the formatted reply).
    await fake.waitFor(() => fake.shownMessages(formatted.id).some((m) => m.parse_mode === 'HTML'), 20_000);
    expect(fake.shownMessages(formatted.id)).toMatchObject([
      { text: 'Some <b>bold</b> text', parse_mode: 'HTML' },
    ]);
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

  it('sends every part of a long reply as HTML, each code part in <pre><code class="language-js">', async () => {
    // How the parts are cut is the Channel contract's (test/contract); this is Telegram's formatting.
    const chat = { ...owner, id: 5009 };
    fake.pushUpdate(dmUpdate(chat, 'long please'));
    const shown = () => fake.shownMessages(chat.id);
    await fake.waitFor(
      () => shown().some((m) => m.text.includes('Outro') && m.parse_mode === 'HTML'),
      20_000,
    );
    const parts = shown();
    expect(parts.length).toBeGreaterThanOrEqual(2);
    for (const part of parts) expect(part.parse_mode).toBe('HTML');
    const codeParts = parts.filter((p) => p.text.includes('let value'));
    expect(codeParts.length).toBeGreaterThanOrEqual(2);
    for (const part of codeParts) expect(part.text).toContain('<pre><code class="language-js">');
    expect(parts[0]!.text).toMatch(/^Intro <b>words<\/b> here\./);
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

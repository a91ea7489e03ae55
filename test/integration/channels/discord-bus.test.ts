/**
 * Discord end to end: fake Discord → real adapter → real Bus (Redis) → real turn
 * worker and agent → fake OpenAI → outbound queue → adapter → fake Discord.
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
import { type FakeDiscord, type FakeUser, startFakeDiscord } from '../../fakes/discord-server.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';

const LONG_CODE = Array.from({ length: 120 }, (_, i) => `fn step_${i}() -> u32 { ${i} } // step ${i}`).join(
  '\n',
);
const LONG_REPLY = `${'Intro words. '.repeat(150)}\n\n\`\`\`rust\n${LONG_CODE}\n\`\`\`\n\n${'Outro words. '.repeat(150)}`;

let fake: FakeDiscord;
let openai: FakeOpenAI;
let role: RunningRole;
let owner: FakeUser;
let workspace: string;
let prefix: string;

beforeAll(async () => {
  const token = 'e2e-discord-token';
  fake = await startFakeDiscord({ token });
  owner = { id: fake.newId(), username: 'owner', global_name: 'Owner' };
  openai = await startFakeOpenAI({
    responder: (req) => {
      const text = lastUserText(req);
      if (text.includes('long please')) return { content: LONG_REPLY };
      if (text.includes('slowly')) return { content: 'slow answer', delayMs: 1500 };
      return { content: `echo: ${text.slice(-40)}` };
    },
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-discord-e2e-'));
  prefix = `test-${randomUUID()}`;
  const config = parseConfig({
    REDIS_URL: inject('redisUrl'),
    MAGPIE_QUEUE_PREFIX: prefix,
    MAGPIE_WORKSPACE: workspace,
    OPENAI_API_KEY: 'test-key',
    OPENAI_BASE_URL: openai.baseURL,
    MAGPIE_MODEL: 'fake-model',
    MAGPIE_HEARTBEAT_INTERVAL: '0',
    DISCORD_BOT_TOKEN: token,
    DISCORD_API_ROOT: fake.apiRoot,
    DISCORD_ALLOW_FROM: owner.id,
  });
  role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 4 });
}, 60_000);

afterAll(async () => {
  await role?.stop();
  await fake?.close();
  await openai?.close();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

describe('discord through the bus', () => {
  it('answers a DM', async () => {
    const dm = fake.newId();
    const id = fake.dispatchMessage({ channelId: dm, author: owner, content: 'hello there' });
    await fake.waitFor(() => fake.sent(dm).length === 1, 20_000);
    expect(fake.sent(dm)[0]!.content).toContain('echo:');
    expect(fake.sent(dm)[0]!.content).toContain('hello there');
    expect(fake.sent(dm)[0]!.messageReference?.message_id ?? id).toBe(id);
  });

  it('splits a 6,000-character model reply with a code block into parts under 2000, fences balanced, in order', async () => {
    expect(LONG_REPLY.length).toBeGreaterThan(6000);
    const dm = fake.newId();
    fake.dispatchMessage({ channelId: dm, author: owner, content: 'long please' });
    await fake.waitFor(
      () => fake.sent(dm).join('') !== '' && fake.sent(dm).some((m) => m.content.includes('Outro')),
      20_000,
    );
    const parts = fake.sent(dm).map((m) => m.content);
    expect(parts.length).toBeGreaterThanOrEqual(4);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(2000);
      expect(part.split('\n').filter((l) => l.startsWith('```')).length % 2).toBe(0);
    }
    expect(parts.filter((p) => p.startsWith('```rust\n')).length).toBeGreaterThanOrEqual(1);
    const lines = parts
      .join('\n')
      .split('\n')
      .filter((l) => l.startsWith('fn step_'));
    expect(lines).toEqual(LONG_CODE.split('\n'));
  });

  it('ignores a server message without a mention and answers one with a mention, mention stripped', async () => {
    const before = openai.requests.length;
    fake.dispatchMessage({
      channelId: fake.textChannelId,
      guildId: fake.guildId,
      author: owner,
      content: 'no mention here',
    });
    fake.dispatchMessage({
      channelId: fake.textChannelId,
      guildId: fake.guildId,
      author: owner,
      nick: 'Captain',
      content: `<@${fake.botUserId}> mentioned question`,
      mentions: [{ id: fake.botUserId, username: fake.botUsername, bot: true }],
    });
    await fake.waitFor(() => fake.sent(fake.textChannelId).length === 1, 20_000);
    const seen = openai.requests.slice(before).map(lastUserText).join('\n');
    expect(seen).toContain('mentioned question');
    expect(seen).not.toContain(`<@${fake.botUserId}>`);
    expect(seen).not.toContain('no mention here');
    expect(fake.sent(fake.textChannelId)[0]!.content).toContain('mentioned question');
  });

  it('gives an unknown DM sender a pairing code, then answers after approval', async () => {
    const stranger = { id: fake.newId(), username: 'newcomer' };
    const dm = fake.newId();
    fake.dispatchMessage({ channelId: dm, author: stranger, content: 'let me in' });
    await fake.waitFor(() => fake.sent(dm).length === 1);
    const code = /approve ([A-Z2-9]{6})/.exec(fake.sent(dm)[0]!.content)?.[1];
    expect(code).toBeDefined();
    expect(await approvePairing(role.bus.redis, prefix, code!)).toMatchObject({ senderId: stranger.id });
    fake.dispatchMessage({ channelId: dm, author: stranger, content: 'now hello' });
    await fake.waitFor(() => fake.sent(dm).length === 2, 20_000);
    expect(fake.sent(dm)[1]!.content).toContain('now hello');
  });

  it('shows typing during a slow turn and not after the reply', async () => {
    const dm = fake.newId();
    const typing = () => fake.calls.filter((c) => c.path === `/channels/${dm}/typing`);
    fake.dispatchMessage({ channelId: dm, author: owner, content: 'answer slowly' });
    await fake.waitFor(() => fake.sent(dm).length === 1, 20_000);
    const reply = fake.calls.find((c) => c.path === `/channels/${dm}/messages`)!;
    expect(typing().length).toBeGreaterThanOrEqual(1);
    expect(typing()[0]!.at).toBeLessThan(reply.at);
    expect(fake.sent(dm)[0]!.content).toBe('slow answer');
  });

  it('passes an image attachment to the model as an image part', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    const dm = fake.newId();
    const before = openai.requests.length;
    fake.dispatchMessage({
      channelId: dm,
      author: owner,
      content: 'what is in this picture?',
      attachments: [fake.addAttachment('pic.png', 'image/png', png)],
    });
    await fake.waitFor(() => fake.sent(dm).length === 1, 20_000);
    const body = JSON.stringify(openai.requests.slice(before).map((r) => r.body.messages));
    expect(body).toContain('image_url');
    expect(body).toContain(`data:image/png;base64,${png.toString('base64')}`);
  });
});

/**
 * Discord end to end: fake Discord → real adapter → real Bus (Redis) → real turn
 * worker and agent → fake OpenAI → outbound queue → adapter → fake Discord.
 * What every channel must do (answer, split, groups, pairing, /stop, typing,
 * redelivery) is the Channel contract (test/contract); these are Discord's own cases.
 */

import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { silentLogger } from '../../../src/log/index.js';
import { roleConfig } from '../../fakes/config.js';
import { type FakeDiscord, type FakeUser, startFakeDiscord } from '../../fakes/discord-server.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { stopRoleAndFakes } from '../../fakes/role.js';

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
      return { content: `echo: ${text.slice(-40)}` };
    },
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-discord-e2e-'));
  prefix = `test-${randomUUID()}`;
  const config = roleConfig(
    { workspace, openai, prefix },
    {
      DISCORD_BOT_TOKEN: token,
      DISCORD_API_ROOT: fake.apiRoot,
      DISCORD_ALLOW_FROM: owner.id,
    },
  );
  role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 4 });
}, 60_000);

afterAll(() => stopRoleAndFakes(role, [fake, openai], workspace));

describe('discord through the bus', () => {
  it("answers a DM as a reply to the user's message (a message reference)", async () => {
    const dm = fake.newId();
    const id = fake.dispatchMessage({ channelId: dm, author: owner, content: 'hello there' });
    // What the channel finally shows (a live preview, if one was shown, is the same message edited).
    await fake.waitFor(() => fake.shown(dm).some((c) => c.includes('hello there')), 20_000);
    const [shown] = fake.shownMessages(dm);
    expect(fake.shownMessages(dm)).toHaveLength(1);
    expect(fake.sent(dm).find((m) => m.id === shown!.id)?.messageReference?.message_id).toBe(id);
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

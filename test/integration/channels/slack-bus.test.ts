/**
 * Slack end to end: fake Slack (Web API + Socket Mode) → real adapter → real
 * Bus (Redis) → real turn worker and agent → fake OpenAI → outbound queue →
 * adapter → fake Slack. What every channel must do is the Channel contract
 * (test/contract/slack.contract.test.ts); these are Slack's own cases: where
 * answers go (DM, channel thread), addressing, the working reaction, mrkdwn,
 * live edits through a 429, files with the bot token, envelopes acknowledged
 * only once on the bus and a redelivery after a restart answered once.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import type { Config } from '../../../src/config/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { roleConfig } from '../../fakes/config.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { stopRoleAndFakes } from '../../fakes/role.js';
import { type FakeSlack, type FakeSlackUser, startFakeSlack } from '../../fakes/slack-server.js';

const BOT_TOKEN = 'xoxb-e2e-slack';
const APP_TOKEN = 'xapp-e2e-slack';
const MARKDOWN =
  '**bold** and _it_ and ~~gone~~, see [the docs](https://example.com/a?b=1) if a < b & c\n\n- one\n- two';
const SLOW = Array.from({ length: 10 }, (_, i) => `Piece ${i + 1} of a slow answer.`).join(' ');

let fake: FakeSlack;
let openai: FakeOpenAI;
let role: RunningRole;
let config: Config;
let owner: FakeSlackUser;
let workspace: string;
const gates = new Map<string, { release: () => void; released: Promise<void> }>();

function gate(key: string) {
  let g = gates.get(key);
  if (!g) {
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    g = { release, released };
    gates.set(key, g);
  }
  return g;
}

beforeAll(async () => {
  fake = await startFakeSlack({ botToken: BOT_TOKEN, appToken: APP_TOKEN });
  owner = { id: fake.newId('U'), name: 'owner', realName: 'Owner' };
  fake.addUser(owner);
  openai = await startFakeOpenAI({
    responder: async (req) => {
      const text = lastUserText(req);
      const hold = /hold:([\w-]+)/.exec(text)?.[1];
      if (hold) await gate(hold).released;
      if (text.includes('markdown please')) return { content: MARKDOWN };
      if (text.includes('slowly please')) return { content: SLOW, pieces: 10, pieceDelayMs: 300 };
      return { content: `echo: ${text.slice(-40)}` };
    },
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-slack-e2e-'));
  config = roleConfig(
    { workspace, openai, prefix: `test-${randomUUID()}` },
    {
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_APP_TOKEN: APP_TOKEN,
      SLACK_API_ROOT: fake.apiRoot,
      SLACK_ALLOW_FROM: owner.id,
    },
  );
  role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 4 });
}, 60_000);

afterAll(async () => {
  for (const g of gates.values()) g.release();
  await stopRoleAndFakes(role, [fake, openai], workspace);
});

const say = (channel: string, text: string, extra: { threadTs?: string; user?: FakeSlackUser } = {}) =>
  fake.deliverMessage({
    channel,
    user: (extra.user ?? owner).id,
    text,
    ...(extra.threadTs ? { threadTs: extra.threadTs } : {}),
  });

describe('slack through the bus', () => {
  it('answers a DM in the DM itself, not in a thread, and acknowledges the envelope', async () => {
    const dm = fake.newId('D');
    const { envelopeId } = say(dm, 'hello there');
    await fake.waitFor(() => fake.shown(dm).some((t) => t.includes('hello there')), 20_000);
    expect(fake.messages(dm)).toHaveLength(1);
    expect(fake.messages(dm)[0]!.threadTs).toBeUndefined();
    expect(fake.envelopes.find((e) => e.envelopeId === envelopeId)?.acked).toBe(true);
  });

  it('in a channel: ignores a message without a mention, answers a mention in its thread, then follows the thread without one', async () => {
    const channel = fake.newId('C');
    say(channel, 'nobody asked you');
    const { ts } = say(channel, `<@${fake.botUserId}> what now?`);
    await fake.waitFor(() => fake.messages(channel).length === 1, 20_000);
    expect(fake.messages(channel)[0]).toMatchObject({ threadTs: ts });
    expect(fake.shown(channel)[0]).toContain('what now?');
    expect(fake.shown(channel)[0]).not.toContain(fake.botUserId);
    // A reply in that thread, no mention: magpie takes part in it.
    say(channel, 'and then?', { threadTs: ts });
    await fake.waitFor(() => fake.messages(channel, ts).length === 2, 20_000);
    expect(fake.shown(channel, ts)[1]).toContain('and then?');
    // One conversation: the thread's session holds both.
    const texts = openai.requests.map(lastUserText).join('\n');
    expect(texts).not.toContain('nobody asked you');
    // Another thread in the channel, without a mention: not magpie's.
    const other = fake.addUserMessage(channel, owner.id, 'a thread of people');
    const marker = say(channel, `<@${fake.botUserId}> marker`);
    await fake.waitFor(() => fake.messages(channel, marker.ts).length === 1, 20_000);
    say(channel, 'chatting among ourselves', { threadTs: other });
    // Handled in order: once the later follow-up is answered, the other thread's message was decided.
    say(channel, 'marker follow-up', { threadTs: marker.ts });
    await fake.waitFor(() => fake.messages(channel, marker.ts).length === 2, 20_000);
    expect(fake.messages(channel, other)).toEqual([]);
  });

  it('gives a stranger in a DM a pairing code, and says nothing to one in a channel', async () => {
    const stranger: FakeSlackUser = { id: fake.newId('U'), name: 'stranger' };
    fake.addUser(stranger);
    const dm = fake.newId('D');
    say(dm, 'let me in', { user: stranger });
    await fake.waitFor(() => fake.messages(dm).length === 1, 20_000);
    expect(fake.shown(dm)[0]).toMatch(/pairing approve [A-Z2-9]{6}/);
    const channel = fake.newId('C');
    const asked = say(channel, `<@${fake.botUserId}> me too`, { user: stranger });
    const marker = say(channel, `<@${fake.botUserId}> owner marker`);
    await fake.waitFor(() => fake.messages(channel, marker.ts).length === 1, 20_000);
    expect(fake.messages(channel, asked.ts)).toEqual([]);
  });

  it('the message being answered wears a reaction while its turn runs, removed after the reply', async () => {
    const dm = fake.newId('D');
    const { ts } = say(dm, 'think hold:react');
    await fake.waitFor(() => fake.reactions(dm, ts).includes('hourglass_flowing_sand'), 20_000);
    expect(fake.messages(dm)).toEqual([]);
    gate('react').release();
    await fake.waitFor(() => fake.messages(dm).length === 1, 20_000);
    await fake.waitFor(() => fake.reactions(dm, ts).length === 0, 20_000);
  });

  it('renders Markdown as mrkdwn: bold, italic, strike, links, bullets, escaped & < >', async () => {
    const dm = fake.newId('D');
    say(dm, 'markdown please');
    await fake.waitFor(() => fake.shown(dm).some((t) => t.includes('two')), 20_000);
    const [text] = fake.shown(dm);
    expect(text).toBe(
      '*bold* and _it_ and ~gone~, see <https://example.com/a?b=1|the docs> if a &lt; b &amp; c\n\n• one\n• two',
    );
  });

  it('streams by chat.update, waits out a 429 (Retry-After) in the middle, and ends with the whole text', async () => {
    const dm = fake.newId('D');
    fake.failNext('chat.update', { status: 429, retryAfter: 1 });
    say(dm, 'slowly please');
    await fake.waitFor(() => fake.shown(dm).some((t) => t.includes('Piece 10 of')), 30_000);
    expect(fake.shown(dm)).toEqual([SLOW]);
    const edits = fake.edits.filter((e) => e.channel === dm);
    const refused = edits.findIndex((e) => e.status === 429);
    expect(refused).toBeGreaterThanOrEqual(0);
    const after = edits.slice(refused + 1).filter((e) => e.outcome === 'edited');
    expect(after.length).toBeGreaterThanOrEqual(1);
    // Slack said wait one second: the next edit came no sooner.
    expect(after[0]!.at - edits[refused]!.at).toBeGreaterThanOrEqual(950);
  }, 40_000);

  it('passes a shared image to the model, fetched with the bot token', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    const dm = fake.newId('D');
    const before = openai.requests.length;
    fake.deliverMessage({
      channel: dm,
      user: owner.id,
      text: 'what is this?',
      files: [fake.addFile('pic.png', 'image/png', png)],
    });
    await fake.waitFor(() => fake.messages(dm).length === 1, 20_000);
    const body = JSON.stringify(openai.requests.slice(before).map((r) => r.body.messages));
    expect(body).toContain(`data:image/png;base64,${png.toString('base64')}`);
    expect(fake.calls.filter((c) => c.method === 'GET /files').map((c) => c.args['authorized'])).toEqual([
      true,
    ]);
  });

  it('an envelope whose ack was lost is delivered again after a restart and answered once', async () => {
    const dm = fake.newId('D');
    fake.loseAcks(1);
    const { envelopeId } = say(dm, 'only once please');
    await fake.waitFor(() => fake.messages(dm).length === 1, 20_000);
    expect(fake.envelopes.find((e) => e.envelopeId === envelopeId)?.acked).toBe(false);
    await role.stop();
    role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 4 });
    await fake.waitFor(() => fake.connections() === 1, 20_000);
    const again = fake.redeliver(envelopeId);
    await fake.waitFor(() => fake.envelopes.find((e) => e.envelopeId === again)?.acked === true, 20_000);
    say(dm, 'marker after the restart');
    await fake.waitFor(() => fake.messages(dm).length >= 2, 20_000);
    expect(fake.shown(dm)).toEqual([
      expect.stringContaining('only once please'),
      expect.stringContaining('marker after the restart'),
    ]);
  }, 60_000);
});

/**
 * Voice replies on Slack through the real stack: the fake Slack's Socket
 * Mode envelope → real adapter (bolt) → Bus (Redis) → turn worker and agent
 * → fake OpenAI (transcription, and /v1/audio/speech answering real OGG/Opus
 * made by espeak-ng + opusenc in the test set-up) → the Web client's
 * files.uploadV2 at the fake: files.getUploadURLExternal, the bytes posted to
 * its upload URL, files.completeUploadExternal into the conversation (and the
 * thread it answers), after the text. A typed message gets text only.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { silentLogger } from '../../../src/log/index.js';
import { roleConfig } from '../../fakes/config.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { opusAudio } from '../../fakes/opus-audio.js';
import { stopRoleAndFakes } from '../../fakes/role.js';
import { type FakeSlack, type FakeSlackUser, startFakeSlack } from '../../fakes/slack-server.js';

const BOT_TOKEN = 'xoxb-voice-slack';
const APP_TOKEN = 'xapp-voice-slack';
let fake: FakeSlack;
let openai: FakeOpenAI;
let role: RunningRole | undefined;
let workspace: string;
let owner: FakeSlackUser;

beforeAll(async () => {
  fake = await startFakeSlack({ botToken: BOT_TOKEN, appToken: APP_TOKEN });
  owner = { id: fake.newId('U'), name: 'owner', realName: 'Owner' };
  fake.addUser(owner);
  openai = await startFakeOpenAI({
    speechAudio: opusAudio(),
    transcript: 'what time is it',
    responder: (req) => ({
      content: lastUserText(req).includes('what time is it') ? 'It is *noon*.' : 'Typed answer.',
    }),
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-slack-voice-'));
  const config = roleConfig(
    { workspace, openai, prefix: `test-${randomUUID()}` },
    {
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_APP_TOKEN: APP_TOKEN,
      SLACK_API_ROOT: fake.apiRoot,
      SLACK_ALLOW_FROM: owner.id,
      MAGPIE_TRANSCRIBE_MODEL: 'whisper-1',
      MAGPIE_TTS: 'endpoint',
    },
  );
  role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 2 });
}, 60_000);

afterAll(() => stopRoleAndFakes(role, [fake, openai], workspace));

describe('voice replies on slack', () => {
  it('answers a voice clip in a channel thread with text, then the OGG/Opus uploaded into that thread', async () => {
    const channel = fake.newId('C');
    const clip = fake.addFile('audio_message.ogg', 'audio/ogg', opusAudio());
    const { ts } = fake.deliverMessage({
      channel,
      user: owner.id,
      text: `<@${fake.botUserId}>`,
      files: [clip],
    });
    await fake.waitFor(() => fake.uploads.some((u) => u.channel === channel && u.completed), 20_000);
    expect(fake.shown(channel, ts).join('\n')).toContain('noon');
    const [upload] = fake.uploads.filter((u) => u.channel === channel);
    expect(upload).toMatchObject({
      filename: 'reply.ogg',
      title: 'Spoken reply',
      threadTs: ts,
      completed: true,
    });
    expect(upload?.bytes.equals(opusAudio())).toBe(true);
    expect(upload?.length).toBe(opusAudio().length);
    // The text went first.
    const order = fake.calls.filter(
      (c) => c.method === 'chat.postMessage' || c.method === 'files.completeUploadExternal',
    );
    expect(order.at(-1)?.method).toBe('files.completeUploadExternal');
    expect(openai.transcriptionRequests.at(-1)?.bytes.equals(opusAudio())).toBe(true);
  });

  it('answers typed text with text only (/voice auto)', async () => {
    const dm = fake.newId('D');
    const uploads = fake.uploads.length;
    fake.deliverMessage({ channel: dm, user: owner.id, text: 'hello there' });
    await fake.waitFor(() => fake.shown(dm).length === 1, 20_000);
    fake.deliverMessage({ channel: dm, user: owner.id, text: 'and again' });
    await fake.waitFor(() => fake.shown(dm).length === 2, 20_000);
    expect(fake.uploads.length).toBe(uploads);
  });
});

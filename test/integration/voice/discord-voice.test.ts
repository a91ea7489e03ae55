/**
 * Voice replies on Discord: a voice note attachment in → the text reply and a
 * Discord voice message (flags IS_VOICE_MESSAGE, one OGG/Opus file,
 * `duration_secs`, a base64 waveform of 256 bytes) at the fake Discord API,
 * posted by the real discord.js REST client. Speech from the fake
 * /v1/audio/speech answering real OGG/Opus.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { silentLogger } from '../../../src/log/index.js';
import { roleConfig } from '../../fakes/config.js';
import {
  type FakeDiscord,
  type FakeUser,
  IS_VOICE_MESSAGE,
  startFakeDiscord,
} from '../../fakes/discord-server.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { opusAudio } from '../../fakes/opus-audio.js';
import { stopRoleAndFakes } from '../../fakes/role.js';

let fake: FakeDiscord;
let openai: FakeOpenAI;
let role: RunningRole;
let owner: FakeUser;
let workspace: string;

beforeAll(async () => {
  const token = 'voice-discord-token';
  fake = await startFakeDiscord({ token });
  owner = { id: fake.newId(), username: 'owner', global_name: 'Owner' };
  openai = await startFakeOpenAI({
    speechAudio: opusAudio(),
    transcript: 'what time is it',
    responder: (req) => ({ content: `You asked: ${lastUserText(req).slice(-40)}` }),
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-discord-voice-'));
  const config = roleConfig(
    { workspace, openai, prefix: `test-${randomUUID()}` },
    {
      DISCORD_BOT_TOKEN: token,
      DISCORD_API_ROOT: fake.apiRoot,
      DISCORD_ALLOW_FROM: owner.id,
      MAGPIE_TRANSCRIBE_MODEL: 'whisper-1',
      MAGPIE_TTS: 'endpoint',
    },
  );
  role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 4 });
}, 60_000);

afterAll(() => stopRoleAndFakes(role, [fake, openai], workspace));

describe('voice replies on discord', () => {
  it('answers a voice note with the text and a voice message with flags, duration and waveform', async () => {
    const dm = fake.newId();
    const ogg = opusAudio();
    const id = fake.dispatchMessage({
      channelId: dm,
      author: owner,
      content: '',
      attachments: [fake.addAttachment('voice-message.ogg', 'audio/ogg', ogg)],
    });
    await fake.waitFor(() => fake.voiceMessages.some((v) => v.channelId === dm), 20_000);
    expect(fake.shown(dm).join('\n')).toContain('You asked');
    const voice = fake.voiceMessages.find((v) => v.channelId === dm)!;
    expect(voice.flags & IS_VOICE_MESSAGE).toBe(IS_VOICE_MESSAGE);
    expect(voice.file.type).toBe('audio/ogg');
    expect(voice.file.bytes.equals(ogg)).toBe(true);
    const preSkip = ogg.readUInt16LE(ogg.indexOf('OpusHead') + 10);
    const granule = Number(ogg.readBigInt64LE(ogg.lastIndexOf('OggS') + 6));
    expect(voice.attachment.duration_secs).toBeCloseTo((granule - preSkip) / 48_000, 2);
    expect(Buffer.from(voice.attachment.waveform!, 'base64')).toHaveLength(256);
    expect(voice.messageReference?.message_id).toBe(id);
    expect(openai.speechRequests.at(-1)?.input).toMatch(/^You asked: .*what time is it\.$/);
  });
});

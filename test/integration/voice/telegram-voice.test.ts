/**
 * Voice replies on Telegram through the real stack: fake Bot API → real
 * adapter (telegraf) → Bus (Redis) → turn worker and agent → fake OpenAI
 * (chat, transcription, /v1/audio/speech answering real OGG/Opus made by
 * espeak-ng + opusenc in the test set-up) → sendVoice at the fake Bot API.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { silentLogger } from '../../../src/log/index.js';
import { roleConfig, telegramEnv } from '../../fakes/config.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { opusAudio } from '../../fakes/opus-audio.js';
import { stopRoleAndFakes } from '../../fakes/role.js';
import { dmUpdate, type FakeTelegram, startFakeTelegram } from '../../fakes/telegram-server.js';

const CODE_AND_LINK = [
  'Read [the guide](https://nodejs.org/en/learn) first.',
  '',
  '```js',
  'console.log("secret code")',
  '```',
  '',
  'Then see https://www.example.com/page for more.',
].join('\n');
/** Twelve sentences of about 40 characters: past MAGPIE_TTS_MAX_CHARS=200. */
const LONG = Array.from({ length: 12 }, (_, i) => `This is sentence number ${i + 1} of the answer.`).join(
  ' ',
);

let fake: FakeTelegram;
let openai: FakeOpenAI;
let role: RunningRole | undefined;
let workspace: string;
const owner = { id: 7001, first_name: 'Owner', username: 'owner' };
let voiceFiles = 0;

beforeAll(async () => {
  fake = await startFakeTelegram({ token: '777:voice-token' });
  openai = await startFakeOpenAI({
    speechAudio: opusAudio(),
    transcript: 'tell me about node',
    responder: (req) => {
      const text = lastUserText(req);
      if (text.includes('long please')) return { content: LONG };
      if (text.includes('tell me about node')) return { content: CODE_AND_LINK };
      return { content: `echo: ${text.slice(-40)}` };
    },
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-voice-e2e-'));
  const config = roleConfig(
    { workspace, openai, prefix: `test-${randomUUID()}` },
    {
      ...telegramEnv(fake, `@${owner.username}`),
      MAGPIE_TRANSCRIBE_MODEL: 'whisper-1',
      MAGPIE_TTS: 'endpoint',
      MAGPIE_TTS_MODEL: 'tts-1',
      MAGPIE_TTS_VOICE: 'alloy',
      MAGPIE_TTS_MAX_CHARS: '200',
    },
  );
  role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 4 });
}, 60_000);

afterAll(() => stopRoleAndFakes(role, [fake, openai], workspace));

/** Sends a voice note (a real OGG/Opus file) from `chatId`. */
function pushVoiceNote(chatId: number): void {
  voiceFiles += 1;
  const id = `voice-in-${voiceFiles}`;
  fake.addFile(id, opusAudio());
  fake.pushUpdate(
    dmUpdate({ ...owner, id: chatId }, '', {
      text: undefined,
      voice: { file_id: id, duration: 3, mime_type: 'audio/ogg', file_size: opusAudio().length },
    }),
  );
}

/** The stream's own length: the last page's granule position less OpusHead's pre-skip, over 48000. */
function streamSeconds(ogg: Buffer): number {
  const head = ogg.indexOf('OpusHead');
  const preSkip = ogg.readUInt16LE(head + 10);
  const last = ogg.lastIndexOf('OggS');
  return (Number(ogg.readBigInt64LE(last + 6)) - preSkip) / 48_000;
}

/** Sends `text` and waits for its answer (holding `shows`), so every earlier turn of that chat is over. */
async function answered(chatId: number, text: string, shows = text): Promise<void> {
  fake.pushUpdate(dmUpdate({ ...owner, id: chatId }, text));
  await fake.waitFor(() => fake.shown(chatId).some((t) => t.includes(shows)), 20_000);
}

describe('voice replies on telegram', () => {
  it('answers a voice note with text and a voice note of valid OGG/Opus, its duration the stream’s', async () => {
    const chat = 7101;
    const before = openai.speechRequests.length;
    pushVoiceNote(chat);
    await fake.waitFor(() => fake.voices(chat).length === 1, 20_000);
    expect(fake.shown(chat).join('\n')).toContain('the guide');
    const [voice] = fake.voices(chat);
    expect(voice!.voice.subarray(0, 4).toString('latin1')).toBe('OggS');
    expect(voice!.voice.includes('OpusHead')).toBe(true);
    expect(voice!.voice.equals(opusAudio())).toBe(true);
    expect(voice!.duration).toBe(Math.max(1, Math.round(streamSeconds(voice!.voice))));
    // Spoken without the code and the addresses: the link by its words, the bare address by its site.
    const spoken = openai.speechRequests.slice(before);
    expect(spoken).toHaveLength(1);
    expect(spoken[0]).toMatchObject({ model: 'tts-1', voice: 'alloy', response_format: 'opus' });
    expect(spoken[0]!.input).toContain('Read the guide first.');
    expect(spoken[0]!.input).toContain('(the code is in the text)');
    expect(spoken[0]!.input).toContain('example.com');
    expect(spoken[0]!.input).not.toMatch(/console\.log|https?:|```|\[|\]\(/);
  });

  it('/voice off stops spoken replies to voice notes; /voice on speaks typed ones, cut at a sentence', async () => {
    const chat = 7102;
    await answered(chat, '/voice off', 'Voice replies are off in this chat');
    pushVoiceNote(chat);
    await fake.waitFor(() => fake.shown(chat).some((t) => t.includes('the guide')), 20_000);
    await answered(chat, 'after the voice note');
    expect(fake.voices(chat)).toHaveLength(0);

    const before = openai.speechRequests.length;
    await answered(chat, '/voice on', 'Voice replies are on in this chat');
    fake.pushUpdate(dmUpdate({ ...owner, id: chat }, 'long please'));
    await fake.waitFor(() => fake.voices(chat).length === 1, 20_000);
    const input = openai.speechRequests.slice(before)[0]!.input!;
    expect(input.length).toBeLessThanOrEqual(200);
    expect(input).toMatch(/^This is sentence number 1 of the answer\..*the answer\.$/);
    expect(LONG.startsWith(input)).toBe(true);
    // The text reply is whole.
    expect(fake.shown(chat).join('\n')).toContain('sentence number 12 of the answer.');
  });

  it('delivers the text alone when the speech endpoint fails', async () => {
    const chat = 7103;
    openai.failSpeech(2); // the SDK's one retry included
    const before = openai.speechRequests.length;
    pushVoiceNote(chat);
    await fake.waitFor(() => fake.shown(chat).some((t) => t.includes('the guide')), 20_000);
    await answered(chat, 'are you still there');
    expect(openai.speechRequests.length - before).toBe(2);
    expect(fake.voices(chat)).toHaveLength(0);
  });

  it('answers typed text in text only (auto)', async () => {
    const chat = 7104;
    const before = openai.speechRequests.length;
    await answered(chat, 'just typing');
    await answered(chat, 'typing again');
    expect(fake.voices(chat)).toHaveLength(0);
    expect(openai.speechRequests.length).toBe(before);
  });
});

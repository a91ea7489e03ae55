/**
 * Voice replies on WhatsApp through the real stack: the fake Cloud API's
 * signed webhook → real adapter → Bus (Redis) → turn worker and agent →
 * fake OpenAI (transcription, and /v1/audio/speech answering real OGG/Opus
 * made by espeak-ng + opusenc in the test set-up) → the spoken reply uploaded
 * to the fake's `/<phone number id>/media` (multipart, audio/ogg) and sent as
 * an `audio` message of that media id with `voice: true`, after the text.
 * A typed message under `/voice auto` gets text only.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { silentLogger } from '../../../src/log/index.js';
import { roleConfig } from '../../fakes/config.js';
import { closedPort } from '../../fakes/net.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { opusAudio } from '../../fakes/opus-audio.js';
import { stopRoleAndFakes } from '../../fakes/role.js';
import { type FakeWhatsApp, startFakeWhatsApp } from '../../fakes/whatsapp-server.js';

const OWNER = '491709876543';
const OTHER = '491709876544';
let fake: FakeWhatsApp;
let openai: FakeOpenAI;
let role: RunningRole | undefined;
let workspace: string;

beforeAll(async () => {
  const port = await closedPort();
  fake = await startFakeWhatsApp({
    token: 'EAAG-voice-whatsapp',
    appSecret: 'voice-app-secret',
    webhookUrl: `http://127.0.0.1:${port}/webhooks/whatsapp`,
  });
  openai = await startFakeOpenAI({
    speechAudio: opusAudio(),
    transcript: 'what time is it',
    responder: (req) => ({
      content: lastUserText(req).includes('what time is it') ? 'It is **noon**.' : 'Typed answer.',
    }),
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-whatsapp-voice-'));
  const config = roleConfig(
    { workspace, openai, prefix: `test-${randomUUID()}` },
    {
      WHATSAPP_ACCESS_TOKEN: fake.token,
      WHATSAPP_PHONE_NUMBER_ID: fake.phoneNumberId,
      WHATSAPP_APP_SECRET: fake.appSecret,
      WHATSAPP_VERIFY_TOKEN: 'voice-verify',
      WHATSAPP_API_ROOT: fake.apiRoot,
      WHATSAPP_ALLOW_FROM: `+${OWNER},+${OTHER}`,
      MAGPIE_WEBHOOK_PORT: String(port),
      MAGPIE_TRANSCRIBE_MODEL: 'whisper-1',
      MAGPIE_TTS: 'endpoint',
    },
  );
  role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 2 });
}, 60_000);

afterAll(() => stopRoleAndFakes(role, [fake, openai], workspace));

describe('voice replies on whatsapp', () => {
  it('answers a voice note with text, then an uploaded OGG/Opus sent as a voice message', async () => {
    const mediaId = fake.addMedia(opusAudio(), 'audio/ogg; codecs=opus');
    const posted = await fake.deliverMessage({
      from: OWNER,
      audio: { mediaId, mimeType: 'audio/ogg', voice: true },
    });
    expect(posted.status).toBe(200);
    await fake.waitFor(() => fake.sent.some((m) => m.to === OWNER && m.type === 'audio'), 20_000);
    const mine = fake.sent.filter((m) => m.to === OWNER);
    expect(mine.map((m) => m.type)).toEqual(['text', 'audio']);
    expect(mine[0]?.text).toContain('noon');
    const upload = fake.uploads.find((u) => u.id === mine[1]?.audio?.mediaId);
    expect(upload).toMatchObject({ type: 'audio/ogg', fileType: 'audio/ogg', fileName: 'reply.ogg' });
    expect(upload?.bytes.equals(opusAudio())).toBe(true);
    expect(mine[1]?.audio?.voice).toBe(true);
    expect(openai.transcriptionRequests.at(-1)?.bytes.equals(opusAudio())).toBe(true);
  });

  it('answers typed text with text only (/voice auto)', async () => {
    const uploads = fake.uploads.length;
    await fake.deliverMessage({ from: OTHER, text: 'hello there' });
    await fake.waitFor(
      () => fake.sent.some((m) => m.to === OTHER && m.text.includes('Typed answer')),
      20_000,
    );
    // The turn is over once its text is out and the worker has moved on; a second message proves it.
    await fake.deliverMessage({ from: OTHER, text: 'and again' });
    await fake.waitFor(() => fake.sent.filter((m) => m.to === OTHER).length === 2, 20_000);
    expect(fake.sent.filter((m) => m.to === OTHER).map((m) => m.type)).toEqual(['text', 'text']);
    expect(fake.uploads.length).toBe(uploads);
  });
});

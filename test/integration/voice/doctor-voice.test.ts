/** `magpie doctor`'s voice check: the engine shown, and with --live one phrase really spoken. */
import { afterEach, describe, expect, it } from 'vitest';
import { buildSpeechEngine } from '../../../src/app/build-voice.js';
import { parseConfig } from '../../../src/app/config.js';
import { voiceCheck } from '../../../src/ops/doctor-voice.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../fakes/openai-server.js';
import { opusAudio } from '../../fakes/opus-audio.js';

let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const voiceOf = (env: Record<string, string>) =>
  parseConfig({ OPENAI_API_KEY: 'k', OPENAI_BASE_URL: fake?.baseURL ?? 'http://127.0.0.1:9/v1', ...env })
    .voice;
const run = (env: Record<string, string>, live: boolean) =>
  voiceCheck(voiceOf(env), live, buildSpeechEngine).run(AbortSignal.timeout(20_000));

describe('doctor: voice', () => {
  it('is skipped when spoken replies are off', async () => {
    expect(await run({}, true)).toMatchObject({
      status: 'skip',
      detail: expect.stringContaining('MAGPIE_TTS=off'),
    });
  });

  it('shows espeak-ng, and with --live speaks a phrase into OGG/Opus', async () => {
    expect(await run({ MAGPIE_TTS: 'espeak', MAGPIE_TTS_VOICE: 'en-us' }, false)).toMatchObject({
      status: 'ok',
      detail: 'espeak-ng, voice en-us (--live speaks a phrase)',
    });
    const live = await run({ MAGPIE_TTS: 'espeak' }, true);
    expect(live).toMatchObject({ status: 'ok' });
    expect((live as { detail: string }).detail).toMatch(
      /spoke "magpie can speak\." \(\d+\.\d s of OGG\/Opus\)/,
    );
  });

  it('with --live asks the speech endpoint, and fails with the fix when it answers an error', async () => {
    fake = await startFakeOpenAI({ speechAudio: opusAudio() });
    const ok = await run({ MAGPIE_TTS: 'endpoint', MAGPIE_TTS_MODEL: 'kokoro' }, true);
    expect(ok).toMatchObject({ status: 'ok' });
    expect(fake.speechRequests.at(-1)).toMatchObject({ model: 'kokoro', input: 'magpie can speak.' });
    fake.failSpeech(2);
    const bad = await run({ MAGPIE_TTS: 'endpoint' }, true);
    expect(bad).toMatchObject({ status: 'fail', fix: expect.stringContaining('/v1/audio/speech') });
  });
});

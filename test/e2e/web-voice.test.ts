/**
 * Voice in the web chat, in headless Chromium (Debian's /usr/bin/chromium
 * through playwright-core) against the built `magpie start` with the
 * dashboard on, real Redis, and the fake OpenAI server transcribing and
 * speaking: Chromium's fake microphone plays the run's espeak-ng WAV
 * (`--use-file-for-fake-audio-capture`); pressing the microphone button and
 * pressing it again records it with MediaRecorder and posts it; the fake's
 * /v1/audio/transcriptions receives that WebM/Opus recording; the model
 * answers the transcript, and (`/voice auto`: a voice note came in) the
 * answer's spoken OGG/Opus shows as an `<audio controls>` player whose
 * source loads (200, audio/ogg, the bytes the speech endpoint made) and
 * which the browser decodes (its duration known) — all within the page's
 * Content-Security-Policy.
 */
import { randomUUID } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readOggOpus } from '../../src/voice/ogg.js';
import { launchChromium } from '../fakes/browser.js';
import { stopProcsThenFake } from '../fakes/daemon.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../fakes/openai-server.js';
import { opusAudio, speechWavPath } from '../fakes/opus-audio.js';
import { freePort } from '../fakes/redis-server.js';
import { waitFor } from '../fakes/wait-for.js';
import { build, daemonEnv, magpie, type Proc, tempWorkspace } from './daemon-helpers.js';

const TOKEN = `web-voice-e2e-${randomUUID()}`;
const TRANSCRIPT = 'what is the weather like';

describe('web chat voice in a browser', () => {
  let fake: FakeOpenAI;
  let daemon: Proc | undefined;
  let browser: Browser | undefined;
  let base: string;

  beforeAll(async () => {
    build();
    fake = await startFakeOpenAI({
      transcript: TRANSCRIPT,
      speechAudio: opusAudio(),
      responder: (req) => ({
        content: lastUserText(req).includes(TRANSCRIPT)
          ? 'Sunny and warm today.'
          : 'I did not hear a question.',
      }),
    });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    daemon = magpie(['start'], {
      ...daemonEnv({
        REDIS_URL: inject('redisUrl'),
        OPENAI_BASE_URL: fake.baseURL,
        MAGPIE_WORKSPACE: tempWorkspace(),
        MAGPIE_TRANSCRIBE_MODEL: 'whisper-1',
        MAGPIE_TTS: 'endpoint',
      }),
      MAGPIE_DASHBOARD_PORT: String(port),
      MAGPIE_DASHBOARD_TOKEN: TOKEN,
    });
    await daemon.waitFor(/magpie is running/, 20_000);
    browser = await launchChromium([
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${speechWavPath()}`,
    ]);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stopProcsThenFake([daemon], fake);
  });

  it('records a question with the microphone button, transcribes it, and plays the spoken answer', async () => {
    const context = await (browser as Browser).newContext();
    await context.grantPermissions(['microphone'], { origin: base });
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    await page.goto(`${base}/chat?name=voice&token=${TOKEN}`);
    await page.getByText('connected', { exact: true }).waitFor({ timeout: 10_000 });

    const mic = page.locator('#mic');
    await mic.waitFor({ state: 'visible' });
    await mic.click();
    await page.locator('#mic.recording').waitFor();
    // The recording's length is the input being made, not a wait for an event: 1.5 s of the WAV.
    await page.waitForTimeout(1_500);
    await mic.click();
    await page.locator('#mic:not(.recording)').waitFor();

    await waitFor(() => fake.transcriptionRequests.length === 1, 15_000, 'a transcription request');
    const [sent] = fake.transcriptionRequests;
    expect(sent?.contentType).toMatch(/^audio\/(webm|ogg)$/);
    expect(sent?.fileName).toMatch(/^voice\.(webm|ogg)$/);
    expect(sent?.bytes.length).toBeGreaterThan(1_000);
    // WebM (EBML) or OGG, as MediaRecorder made it.
    expect(['1a45dfa3', '4f676753']).toContain(sent?.bytes.subarray(0, 4).toString('hex'));

    await page.getByText('Sunny and warm today.').waitFor({ timeout: 15_000 });
    const player = page.locator('.msg audio');
    await player.waitFor({ state: 'attached', timeout: 15_000 });
    expect(await player.count()).toBe(1);
    // The browser fetched and decoded the source: its duration is the speech's.
    const duration = await waitFor(
      async () => {
        const state = await player.evaluate((el) => {
          const audio = el as unknown as { readyState: number; duration: number };
          return { ready: audio.readyState, duration: audio.duration };
        });
        return state.ready >= 1 && Number.isFinite(state.duration) && state.duration > 0
          ? state.duration
          : undefined;
      },
      10_000,
      'the player to load its audio',
    );
    const spoken = readOggOpus(opusAudio())?.durationSeconds ?? 0;
    expect(Math.abs(duration - spoken)).toBeLessThan(0.5);
    const src = await player.getAttribute('src');
    expect(src).toMatch(/^\/chat\/audio\?chat=voice&id=r-.+-voice$/);
    const loaded = await page.evaluate(async (url) => {
      const res = await fetch(url, { credentials: 'same-origin' });
      const bytes = new Uint8Array(await res.arrayBuffer());
      const hex = Array.from(bytes, (x) => x.toString(16).padStart(2, '0')).join('');
      return { status: res.status, type: res.headers.get('content-type'), hex };
    }, src as string);
    expect(loaded.status).toBe(200);
    expect(loaded.type).toBe('audio/ogg');
    expect(loaded.hex).toBe(opusAudio().toString('hex'));
    await page.locator('.msg.user', { hasText: 'voice message' }).waitFor();
    expect(violations).toEqual([]);
    await context.close();
  }, 60_000);
});

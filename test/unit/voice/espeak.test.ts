import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/index.js';
import { EspeakEngine } from '../../../src/voice/espeak.js';
import { readOggOpus } from '../../../src/voice/ogg.js';

describe('EspeakEngine (espeak-ng → opusenc, offline)', () => {
  it('speaks text given on stdin into a playable OGG/Opus stream', async () => {
    const ogg = await new EspeakEngine({ voice: 'en-us' }).speak('Good morning. The kettle is on.');
    expect(ogg.subarray(0, 4).toString('latin1')).toBe('OggS');
    expect(readOggOpus(ogg)!.durationSeconds).toBeGreaterThan(1);
  });

  it('speaks text that looks like options as words, never as arguments', async () => {
    const target = path.join(os.tmpdir(), `magpie-espeak-${process.pid}-${Date.now()}.wav`);
    const ogg = await new EspeakEngine().speak(`--version -w ${target}; rm -rf /`);
    expect(readOggOpus(ogg)!.durationSeconds).toBeGreaterThan(1);
    expect(existsSync(target)).toBe(false);
  });

  it('refuses a voice name that is not one (no way onto the command line)', () => {
    expect(() => new EspeakEngine({ voice: 'en --stdout' })).toThrow(RangeError);
    expect(() => new EspeakEngine({ voice: '-w/tmp/x' })).toThrow(RangeError);
  });

  it('fails with TTS_FAILED when the time limit passes or a program is missing', async () => {
    await expect(new EspeakEngine({ timeoutMs: 1 }).speak('word '.repeat(2000))).rejects.toMatchObject({
      code: 'TTS_FAILED',
      message: expect.stringContaining('longer than 1 ms'),
    });
    const missing = new EspeakEngine({ opusenc: 'opusenc-not-installed' }).speak('hi');
    await expect(missing).rejects.toBeInstanceOf(AppError);
    await expect(missing).rejects.toMatchObject({ message: 'opusenc is not installed' });
  });
});

import { describe, expect, it } from 'vitest';
import { readOggOpus, waveformOf } from '../../../src/voice/ogg.js';
import { opusAudio } from '../../fakes/opus-audio.js';

describe('readOggOpus', () => {
  it('reads the length of a real OGG/Opus stream from its last granule position and pre-skip', () => {
    const ogg = opusAudio();
    const info = readOggOpus(ogg)!;
    const preSkip = ogg.readUInt16LE(ogg.indexOf('OpusHead') + 10);
    const last = Number(ogg.readBigInt64LE(ogg.lastIndexOf('OggS') + 6));
    expect(info.durationSeconds).toBeCloseTo((last - preSkip) / 48_000, 6);
    expect(info.durationSeconds).toBeGreaterThan(1);
    expect(info.packetSizes.length).toBeGreaterThan(50);
  });

  it('refuses what is not OGG/Opus: other bytes, a cut stream, an OGG without OpusHead', () => {
    const ogg = opusAudio();
    expect(readOggOpus(Buffer.from('RIFF....WAVEfmt '))).toBeUndefined();
    expect(readOggOpus(ogg.subarray(0, ogg.length - 10))).toBeUndefined();
    const vorbis = Buffer.from(ogg);
    vorbis.write('OpusHeaX', vorbis.indexOf('OpusHead'), 'latin1');
    expect(readOggOpus(vorbis)).toBeUndefined();
    expect(readOggOpus(new Uint8Array())).toBeUndefined();
  });
});

describe('waveformOf', () => {
  it('gives 256 bytes scaled to 255 at the loudest', () => {
    const wave = waveformOf(readOggOpus(opusAudio())!);
    expect(wave).toHaveLength(256);
    expect(Math.max(...wave)).toBe(255);
    expect(new Set(wave).size).toBeGreaterThan(10);
  });
});

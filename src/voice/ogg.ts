/**
 * What the senders need to know of an OGG/Opus stream without decoding it:
 * that it is one (`OggS` pages, an `OpusHead` first packet), its length in
 * seconds (the last page's granule position less the pre-skip, at 48 kHz)
 * and a coarse waveform for Discord's voice messages (the size of each Opus
 * packet stands in for its loudness: silence encodes small).
 */

/** What {@link readOggOpus} found. */
export interface OggOpusInfo {
  /** Playing time in seconds: (last granule − pre-skip) / 48000. */
  durationSeconds: number;
  /** The audio packets' sizes in bytes, in order (the two header packets left out). */
  packetSizes: number[];
}

const OPUS_RATE = 48_000;

/**
 * Reads an OGG/Opus stream's pages; undefined when `bytes` is not one (no
 * `OggS` at the start, a cut page, or no `OpusHead` in the first packet).
 *
 * @example readOggOpus(await readFile('note.ogg'))?.durationSeconds // 2.43
 */
export function readOggOpus(bytes: Uint8Array): OggOpusInfo | undefined {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let offset = 0;
  let preSkip: number | undefined;
  let lastGranule = 0n;
  let packet = 0;
  let packetIndex = 0;
  const packetSizes: number[] = [];
  while (offset < buf.length) {
    if (offset + 27 > buf.length || buf.toString('latin1', offset, offset + 4) !== 'OggS') return undefined;
    const granule = buf.readBigInt64LE(offset + 6);
    const segments = buf[offset + 26]!;
    const table = offset + 27;
    let body = table + segments;
    if (body > buf.length) return undefined;
    for (let i = 0; i < segments; i++) {
      const lacing = buf[table + i]!;
      if (packetIndex === 0 && preSkip === undefined && packet === 0 && body + 19 <= buf.length) {
        if (buf.toString('latin1', body, body + 8) !== 'OpusHead') return undefined;
        preSkip = buf.readUInt16LE(body + 10);
      }
      packet += lacing;
      body += lacing;
      if (lacing < 255) {
        // Packets 0 and 1 are OpusHead and OpusTags.
        if (packetIndex >= 2) packetSizes.push(packet);
        packetIndex += 1;
        packet = 0;
      }
    }
    if (body > buf.length) return undefined;
    if (granule >= 0n) lastGranule = granule;
    offset = body;
  }
  if (preSkip === undefined) return undefined;
  const samples = Number(lastGranule) - preSkip;
  return { durationSeconds: Math.max(0, samples) / OPUS_RATE, packetSizes };
}

/**
 * A waveform of `points` bytes (0–255): the packets split into `points` runs,
 * each run's mean packet size scaled so the largest is 255. Discord shows it
 * under a voice message; it is a likeness of the loudness, not a measurement.
 */
export function waveformOf(info: OggOpusInfo, points = 256): Uint8Array {
  const out = new Uint8Array(points);
  const sizes = info.packetSizes;
  if (sizes.length === 0) return out;
  const means: number[] = [];
  for (let i = 0; i < points; i++) {
    const from = Math.floor((i * sizes.length) / points);
    const to = Math.max(from + 1, Math.floor(((i + 1) * sizes.length) / points));
    const run = sizes.slice(from, Math.min(to, sizes.length));
    means.push(run.length === 0 ? 0 : run.reduce((a, b) => a + b, 0) / run.length);
  }
  const floor = Math.min(...sizes);
  const top = Math.max(...means) - floor;
  for (let i = 0; i < points; i++) {
    out[i] = top <= 0 ? 0 : Math.round((Math.max(0, means[i]! - floor) / top) * 255);
  }
  return out;
}

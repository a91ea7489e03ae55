/**
 * Reading a body with a size cap: the one loop behind every download that must
 * not fill the memory — attachments (channels/download.ts, which refuses what
 * is over) and web_fetch (which keeps the first part). No imports, so any
 * folder can use it.
 */

/** What {@link readCapped} read. */
export interface CappedRead {
  /** The body, or its first `maxBytes` when it was longer. */
  bytes: Buffer;
  /** More than `maxBytes` arrived; the rest was not read. */
  over: boolean;
  /** Bytes received, counting the chunk that passed the cap. */
  seen: number;
}

/**
 * Reads `body` (a fetch body or a Node stream) until it ends or passes
 * `maxBytes`, whichever comes first. Leaving early cancels or destroys the
 * body, so an endless or oversized one is read no further. Rejects when the
 * body fails.
 *
 * @example
 * const { bytes, over } = await readCapped(res.body, 2 * 1024 * 1024);
 */
export async function readCapped(body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<CappedRead> {
  const chunks: Buffer[] = [];
  let kept = 0;
  let seen = 0;
  for await (const chunk of body) {
    seen += chunk.length;
    const room = maxBytes - kept;
    if (chunk.length > room) {
      if (room > 0) chunks.push(Buffer.from(chunk.subarray(0, room)));
      return { bytes: Buffer.concat(chunks), over: true, seen };
    }
    chunks.push(Buffer.from(chunk));
    kept += chunk.length;
  }
  return { bytes: Buffer.concat(chunks), over: false, seen };
}

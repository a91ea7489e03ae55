/** readCapped: the whole body up to the cap, the first maxBytes past it, and an endless body left after one chunk too many. */
import { describe, expect, it } from 'vitest';
import { readCapped } from '../../../src/net/read-capped.js';

async function* chunks(...sizes: number[]): AsyncGenerator<Uint8Array> {
  for (const [i, size] of sizes.entries()) yield new Uint8Array(size).fill(i + 1);
}

describe('readCapped', () => {
  it('reads a body of exactly maxBytes whole, not as cut', async () => {
    const read = await readCapped(chunks(400, 600), 1000);
    expect(read.over).toBe(false);
    expect(read.seen).toBe(1000);
    expect(read.bytes).toEqual(Buffer.concat([Buffer.alloc(400, 1), Buffer.alloc(600, 2)]));
  });

  it('keeps the first maxBytes of a longer body, splitting the chunk that passes the cap', async () => {
    const read = await readCapped(chunks(600, 600, 600), 1000);
    expect(read).toMatchObject({ over: true, seen: 1200 });
    expect(read.bytes).toEqual(Buffer.concat([Buffer.alloc(600, 1), Buffer.alloc(400, 2)]));
  });

  it('stops pulling an endless body at the first chunk over the cap and closes it', async () => {
    let pulled = 0;
    let closed = false;
    async function* endless(): AsyncGenerator<Uint8Array> {
      try {
        while (true) {
          pulled++;
          yield new Uint8Array(100);
        }
      } finally {
        closed = true;
      }
    }
    const read = await readCapped(endless(), 1050);
    expect(read).toMatchObject({ over: true, seen: 1100 });
    expect(read.bytes).toHaveLength(1050);
    expect(pulled).toBe(11);
    expect(closed).toBe(true);
  });

  it('rejects when the body fails', async () => {
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(10);
      throw new RangeError('connection reset');
    }
    await expect(readCapped(failing(), 1000)).rejects.toThrow('connection reset');
  });
});

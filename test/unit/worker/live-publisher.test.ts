/** The worker's live snapshots: nothing for a quick answer, then coalesced at a bounded pace. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../../src/log/index.js';
import type { LiveUpdate } from '../../../src/messages/live-update.js';
import { LivePublisher } from '../../../src/worker/live-publisher.js';

let published: LiveUpdate[];
let live: LivePublisher;

beforeEach(() => {
  vi.useFakeTimers();
  published = [];
  live = new LivePublisher({
    base: { turn: 't', channel: 'telegram', chatId: '1', metadata: {} },
    publish: async (update) => {
      published.push(update);
    },
    logger: silentLogger(),
    firstAfterMs: 500,
    intervalMs: 250,
  });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('LivePublisher', () => {
  it('publishes nothing for an answer that is done before the first wait ends', async () => {
    live.delta('Quick ');
    live.delta('answer.');
    await vi.advanceTimersByTimeAsync(499);
    await live.close();
    await vi.advanceTimersByTimeAsync(5000);
    expect(published).toEqual([]);
  });

  it('publishes the whole text so far after the first wait, then at most one snapshot per interval', async () => {
    live.delta('Hel');
    await vi.advanceTimersByTimeAsync(500);
    expect(published.map((u) => u.text)).toEqual(['Hel']);
    for (const piece of ['lo', ' wor', 'ld']) {
      live.delta(piece);
      await vi.advanceTimersByTimeAsync(50);
    }
    expect(published).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(200);
    expect(published.map((u) => [u.seq, u.text])).toEqual([
      [0, 'Hel'],
      [1, 'Hello world'],
    ]);
    await live.close();
    expect(live.published).toBe(2);
  });

  it('shows a progress line while a tool runs and starts the next call’s text afresh', async () => {
    live.delta('Let me look.');
    live.tool({ id: 'c1', name: 'web_search', arguments: '{"query":"redis streams"}' });
    await vi.advanceTimersByTimeAsync(500);
    expect(published.at(-1)).toMatchObject({
      text: 'Let me look.',
      progress: 'searching the web: redis streams',
    });
    live.iteration(2);
    live.delta('Found it.');
    await vi.advanceTimersByTimeAsync(250);
    expect(published.at(-1)).toMatchObject({ text: 'Found it.' });
    expect(published.at(-1)?.progress).toBeUndefined();
  });

  it('publishes nothing after close, and close waits for the snapshot in flight', async () => {
    let release: () => void = () => {};
    const slow = new LivePublisher({
      base: { turn: 't', channel: 'telegram', chatId: '1', metadata: {} },
      publish: (update) =>
        new Promise<void>((resolve) => {
          published.push(update);
          release = resolve;
        }),
      logger: silentLogger(),
      firstAfterMs: 0,
    });
    slow.delta('a');
    await vi.advanceTimersByTimeAsync(0);
    let closed = false;
    const closing = slow.close().then(() => {
      closed = true;
    });
    slow.delta('b');
    await vi.advanceTimersByTimeAsync(1000);
    expect(closed).toBe(false);
    release();
    await closing;
    expect(published.map((u) => u.text)).toEqual(['a']);
  });
});

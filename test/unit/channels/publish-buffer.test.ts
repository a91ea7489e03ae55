/** PublishBuffer: order, retry until the bus is back, bounded capacity, rejected messages, close. */
import { describe, expect, it } from 'vitest';
import { PublishBuffer } from '../../../src/channels/publish-buffer.js';
import { AppError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import type { InboundMessageInput } from '../../../src/messages/messages.js';
import { waitFor } from '../../fakes/wait-for.js';

const idOf = (m: InboundMessageInput) => m.id;
const msg = (content: string): InboundMessageInput => ({
  id: `m-${content}`,
  channel: 'discord',
  chatId: '1',
  content,
});

/** A publish function that fails while `down` is true. */
function flakyBus() {
  const state = { down: false, published: [] as string[], attempts: 0, reject: new Set<string>() };
  const publish = async (m: InboundMessageInput) => {
    state.attempts++;
    if (state.reject.has(m.content)) throw new AppError('INVALID_MESSAGE', 'bad');
    if (state.down) throw new AppError('REDIS_UNAVAILABLE', 'away', { transient: true });
    state.published.push(m.content);
  };
  return { state, publish };
}

/** A PublishBuffer (silent logger, `options` on top) over a {@link flakyBus}. */
function bufferOverFlakyBus(
  options: Partial<ConstructorParameters<typeof PublishBuffer<InboundMessageInput>>[0]> = {},
) {
  const { state, publish } = flakyBus();
  return {
    state,
    buffer: new PublishBuffer({ publish, idOf, logger: silentLogger(), label: 'test', ...options }),
  };
}

describe('PublishBuffer', () => {
  it('publishes in arrival order', async () => {
    const { state, buffer } = bufferOverFlakyBus();
    for (const c of ['a', 'b', 'c']) buffer.push(msg(c));
    await buffer.idle();
    expect(state.published).toEqual(['a', 'b', 'c']);
    expect(buffer.size).toBe(0);
  });

  it('holds messages while the bus fails and publishes them in order when it returns', async () => {
    const { state, buffer } = bufferOverFlakyBus({ initialDelayMs: 5, maxDelayMs: 20 });
    state.down = true;
    for (const c of ['a', 'b', 'c']) buffer.push(msg(c));
    await waitFor(() => state.attempts >= 3, 5_000, 'three failed attempts', 5);
    expect(buffer.size).toBe(3);
    expect(state.published).toEqual([]);
    state.down = false;
    buffer.push(msg('d'));
    await buffer.idle();
    expect(state.published).toEqual(['a', 'b', 'c', 'd']);
  });

  it('drops the oldest message when full', async () => {
    const { state, buffer } = bufferOverFlakyBus({ capacity: 2, initialDelayMs: 5 });
    state.down = true;
    for (const c of ['a', 'b', 'c', 'd']) buffer.push(msg(c));
    expect(buffer.size).toBe(2);
    state.down = false;
    await buffer.idle();
    expect(state.published).toEqual(['c', 'd']);
  });

  it('drops a message the bus rejects as invalid instead of retrying it forever', async () => {
    const { state, publish } = flakyBus();
    state.reject.add('bad');
    const buffer = new PublishBuffer({ publish, idOf, logger: silentLogger(), label: 'test' });
    for (const c of ['a', 'bad', 'b']) buffer.push(msg(c));
    await buffer.idle();
    expect(state.published).toEqual(['a', 'b']);
  });

  it('retries an unclassified error (assumed transient) until it passes', async () => {
    let failures = 2;
    const published: string[] = [];
    const buffer = new PublishBuffer<InboundMessageInput>({
      publish: async (m) => {
        if (failures-- > 0) throw new Error('connection reset');
        published.push(m.content);
      },
      idOf,
      logger: silentLogger(),
      label: 'test',
      initialDelayMs: 5,
    });
    buffer.push(msg('x'));
    await buffer.idle();
    expect(published).toEqual(['x']);
  });

  it('stops retrying on close and ignores later pushes', async () => {
    const { state, buffer } = bufferOverFlakyBus({ initialDelayMs: 10_000, maxDelayMs: 10_000 });
    state.down = true;
    buffer.push(msg('a'));
    const started = Date.now();
    await buffer.close();
    expect(Date.now() - started).toBeLessThan(5000);
    buffer.push(msg('b'));
    expect(buffer.size).toBe(0);
    expect(state.published).toEqual([]);
  });

  it('rejects bad options', () => {
    const { publish } = flakyBus();
    expect(
      () => new PublishBuffer({ publish, idOf, logger: silentLogger(), label: 'test', capacity: 0 }),
    ).toThrow(RangeError);
    expect(
      () =>
        new PublishBuffer({
          publish,
          idOf,
          logger: silentLogger(),
          label: 'test',
          initialDelayMs: 50,
          maxDelayMs: 10,
        }),
    ).toThrow(RangeError);
  });
});

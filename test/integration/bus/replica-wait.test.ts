/**
 * MAGPIE_REDIS_MIN_REPLICAS on the run's redis-server, which has no replica:
 * a publish is refused with a clear, transient error (the channel then does
 * not acknowledge), its redelivery is taken once, and with 0 nothing waits.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/index.js';
import { busConnector, cleanupsAfterEach, inbound, testConfig } from './helpers.js';

describe('acknowledged means replicated', () => {
  const cleanups = cleanupsAfterEach();
  const connect = busConnector(cleanups);

  it('refuses an inbound publish no replica confirmed, and takes its redelivery once', async () => {
    const bus = await connect(
      testConfig(undefined, { MAGPIE_REDIS_MIN_REPLICAS: '1', MAGPIE_REDIS_WAIT_TIMEOUT: '100ms' }),
    );
    const message = inbound('c1', 'hello');
    for (let delivery = 0; delivery < 2; delivery++) {
      const refused = await bus.publishInbound(message).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused).toBeInstanceOf(AppError);
      expect(refused).toMatchObject({ code: 'REDIS_UNAVAILABLE', transient: true });
      expect((refused as AppError).message).toBe(
        'the inbound message reached 0 of the 1 Redis replica(s) MAGPIE_REDIS_MIN_REPLICAS asks for within 100 ms: not acknowledged, the platform will deliver it again',
      );
    }
    expect(await bus.mailbox('test:c1').length()).toBe(1);
  });

  it('refuses an outbound record no replica confirmed', async () => {
    const bus = await connect(
      testConfig(undefined, { MAGPIE_REDIS_MIN_REPLICAS: '2', MAGPIE_REDIS_WAIT_TIMEOUT: '50ms' }),
    );
    const out = { id: `o-${randomUUID()}`, channel: 'test', chatId: 'c1', content: 'hi' };
    await expect(bus.publishOutbound(out)).rejects.toThrow(
      /^the outbound message reached 0 of the 2 Redis replica/,
    );
  });

  it('waits for nothing when MAGPIE_REDIS_MIN_REPLICAS is 0', async () => {
    const bus = await connect(testConfig());
    await bus.publishInbound(inbound('c1', 'hello'));
    expect(await bus.mailbox('test:c1').length()).toBe(1);
  });
});

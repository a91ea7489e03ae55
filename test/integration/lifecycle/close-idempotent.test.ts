/**
 * close()/stop() of the long-lived parts is idempotent: a second call returns
 * the first call's promise and does the clean-up no second time (Telegram
 * channel against the fake Bot API, and the Redis-backed parts on real Redis).
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { Bus } from '../../../src/bus/bus.js';
import { CronStore } from '../../../src/bus/cron-store.js';
import { RedisPairingStore } from '../../../src/bus/pairing-store.js';
import { Subscriber } from '../../../src/bus/subscriber.js';
import { PublishBuffer } from '../../../src/channels/publish-buffer.js';
import { TelegramChannel } from '../../../src/channels/telegram/index.js';
import { AppError } from '../../../src/errors/index.js';
import type { HelperOutcome } from '../../../src/helpers/runner.js';
import { HelperWorker } from '../../../src/helpers/worker.js';
import { createLogger, silentLogger } from '../../../src/log/index.js';
import { startFakeTelegram } from '../../fakes/telegram-server.js';
import { waitFor } from '../../fakes/wait-for.js';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
});
afterAll(async () => {
  await redis.quit();
});

/** A logger whose JSON lines are collected. */
function recordingLogger(): { logger: ReturnType<typeof createLogger>; lines: () => string[] } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { logger: createLogger({ level: 'debug', destination }), lines: () => chunks.join('').split('\n') };
}

describe('idempotent close', () => {
  it('TelegramChannel.stop: the same promise on every call, before and after it settled', async () => {
    const fake = await startFakeTelegram({ token: '4242:secret-token' });
    try {
      const config = parseConfig({
        TELEGRAM_BOT_TOKEN: fake.token,
        TELEGRAM_API_ROOT: fake.apiRoot,
        TELEGRAM_ALLOW_FROM: '*',
        MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
      });
      const bus = {
        publishInbound: async () => undefined,
        cancel: async () => false,
        answerApproval: async () => ({ kind: 'none' as const }),
      };
      const channel = new TelegramChannel(
        { config, bus, logger: silentLogger(), pairing: new RedisPairingStore(redis, config.redis.prefix) },
        { pollTimeoutSeconds: 1, typingIntervalMs: 100, retryDelayMs: 50 },
      );
      await channel.start();
      const first = channel.stop();
      const second = channel.stop();
      expect(second).toBe(first);
      await first;
      expect(channel.stop()).toBe(first);
    } finally {
      await fake.close();
    }
  });

  it('Subscriber.close: the same promise, handlers dropped and the connection ended', async () => {
    const connection = new Redis(inject('redisUrl'));
    const subscriber = new Subscriber(connection, silentLogger());
    await subscriber.subscribe(`test-${randomUUID()}`, () => undefined);
    const first = subscriber.close();
    expect(subscriber.close()).toBe(first);
    await first;
    await waitFor(() => connection.status === 'end', 5_000, 'the subscriber connection to end');
  });

  it('CronStore.close: the same promise, and the borrowed connection still usable', async () => {
    const store = new CronStore({ connection: redis, prefix: `test-${randomUUID()}` });
    const first = store.close();
    expect(store.close()).toBe(first);
    await first;
    expect(await redis.ping()).toBe('PONG');
  });

  it('HelperWorker.close: the same promise before and after start', async () => {
    const config = parseConfig({
      REDIS_URL: inject('redisUrl'),
      MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
    });
    const bus = await Bus.connect({ config, logger: silentLogger() });
    try {
      const runner = { run: async (): Promise<HelperOutcome> => ({ text: 'done', outcome: 'ok' }) };
      const unstartedWorker = new HelperWorker({ bus, runner, logger: silentLogger() });
      const unstarted = unstartedWorker.close();
      expect(unstartedWorker.close()).toBe(unstarted);
      await unstarted;
      const worker = new HelperWorker({
        bus,
        runner,
        logger: silentLogger(),
        shutdownTimeoutMs: 1_000,
      });
      await worker.start();
      const first = worker.close();
      expect(worker.close()).toBe(first);
      await first;
    } finally {
      const closing = bus.close();
      expect(bus.close()).toBe(closing);
      await closing;
    }
  });

  it('PublishBuffer.close: the same promise, held messages reported lost once', async () => {
    const { logger, lines } = recordingLogger();
    const buffer = new PublishBuffer<string>({
      publish: async () => {
        throw new AppError('REDIS_UNAVAILABLE', 'Redis is away', { transient: true });
      },
      idOf: (item) => item,
      logger,
      label: 'discord',
      initialDelayMs: 10,
      maxDelayMs: 20,
    });
    buffer.push('held');
    await waitFor(
      () => lines().some((l) => l.includes('holding discord messages')),
      5_000,
      'a failed publish',
    );
    const first = buffer.close();
    expect(buffer.close()).toBe(first);
    await first;
    await buffer.close();
    expect(lines().filter((l) => l.includes('not yet on the bus'))).toHaveLength(1);
  });
});

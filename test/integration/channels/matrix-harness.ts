/**
 * Matrix adapters over a real Bus (Redis) against the fake homeserver, for
 * the Matrix integration cases: gateways (each its own MatrixChannel) that
 * can be stopped and started again on the same prefix, and the mailbox each
 * room's messages land in.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../../src/app/config.js';
import { Bus } from '../../../src/bus/bus.js';
import { MatrixChannel, type MatrixChannelOptions } from '../../../src/channels/matrix/index.js';
import type { Config } from '../../../src/config/index.js';
import { createLogger, type Logger, silentLogger } from '../../../src/log/index.js';
import { type FakeMatrix, startFakeMatrix } from '../../fakes/matrix-server.js';

export const BOT_TOKEN = 'syt_matrix_bot';

export interface MatrixFixture {
  fake: FakeMatrix;
  bot: string;
  owner: string;
  stranger: string;
  prefix: string;
  /** The state folder every gateway of this fixture shares (the bot's crypto keys live there). */
  stateDir: string;
  config(env?: Record<string, string>): Config;
  /** A gateway: its own Bus and MatrixChannel, started. */
  gateway(env?: Record<string, string>, options?: MatrixChannelOptions): Promise<Gateway>;
  close(): Promise<void>;
}

export interface Gateway {
  bus: Bus;
  channel: MatrixChannel;
  /** What a room's mailbox holds (its session `matrix:<room>`, or a thread's). */
  mailbox(room: string, thread?: string): Promise<string[]>;
  stop(): Promise<void>;
}

/** The fake homeserver with a bot (logged in by token), an owner (allowed) and a stranger. */
export async function matrixFixture(redisUrl: string): Promise<MatrixFixture> {
  const fake = await startFakeMatrix();
  const bot = fake.addUser('magpie', { token: BOT_TOKEN, password: 'bot-password', displayName: 'Magpie' });
  const owner = fake.addUser('owner', { displayName: 'Owner' });
  const stranger = fake.addUser('stranger', { displayName: 'Stranger' });
  const prefix = `test-${randomUUID()}`;
  const stateDir = await mkdtemp(path.join(tmpdir(), 'magpie-matrix-state-'));
  const gateways: Gateway[] = [];
  const config = (env: Record<string, string> = {}) =>
    parseConfig({
      REDIS_URL: redisUrl,
      MAGPIE_QUEUE_PREFIX: prefix,
      MATRIX_HOMESERVER_URL: fake.url,
      MATRIX_ACCESS_TOKEN: BOT_TOKEN,
      MATRIX_ALLOW_FROM: owner,
      MAGPIE_STATE_DIR: stateDir,
      ...env,
    });
  return {
    fake,
    bot,
    owner,
    stranger,
    prefix,
    stateDir,
    config,
    async gateway(env, options) {
      const cfg = config(env);
      const logger: Logger = process.env['MATRIX_TEST_LOG']
        ? createLogger({ level: 'trace' })
        : silentLogger();
      const bus = await Bus.connect({ config: cfg, logger, url: redisUrl });
      const channel = new MatrixChannel(
        { config: cfg, bus, logger, pairing: bus.pairingStore() },
        bus.matrixStore(),
        { pollTimeoutMs: 2000, retryMs: 50, editIntervalMs: 50, ...options },
      );
      await channel.start();
      let stopped: Promise<void> | undefined;
      const gateway: Gateway = {
        bus,
        channel,
        async mailbox(room, thread) {
          const read = await bus.mailbox(thread ? `matrix:${room}/${thread}` : `matrix:${room}`).read(0);
          return read.messages.map((m) => m.content);
        },
        stop() {
          stopped ??= channel.stop().then(() => bus.close());
          return stopped;
        },
      };
      gateways.push(gateway);
      return gateway;
    },
    async close() {
      for (const g of gateways) await g.stop();
      await fake.close();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

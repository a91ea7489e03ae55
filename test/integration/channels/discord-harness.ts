/** Shared set-up for the Discord channel tests: fake Discord, real Redis, the real adapter. */

import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { parseConfig } from '../../../src/app/config.js';
import { Bus } from '../../../src/bus/bus.js';
import { RedisPairingStore } from '../../../src/bus/pairing-store.js';
import { DiscordChannel, type DiscordChannelOptions } from '../../../src/channels/discord/index.js';
import type { ChannelBus } from '../../../src/channels/types.js';
import type { Config } from '../../../src/config/index.js';
import { type Logger, silentLogger } from '../../../src/log/index.js';
import type { AnswerOutcome, ApprovalAnswer } from '../../../src/messages/approval.js';
import type { InboundMessageInput } from '../../../src/messages/messages.js';
import { type FakeDiscord, type FakeUser, startFakeDiscord } from '../../fakes/discord-server.js';

/** A ChannelBus that records what the adapter publishes; can be told to fail like an absent Redis. */
export class RecordingBus implements ChannelBus {
  readonly published: InboundMessageInput[] = [];
  readonly cancelled: string[] = [];
  failing = false;
  attempts = 0;

  async publishInbound(message: InboundMessageInput): Promise<void> {
    this.attempts++;
    if (this.failing) throw new Error('connection is closed');
    this.published.push(message);
  }

  async cancel(sessionKey: string): Promise<boolean> {
    this.cancelled.push(sessionKey);
    return true;
  }

  readonly answers: Array<{ sessionKey: string; answer: ApprovalAnswer }> = [];
  /** Records the answer; no question waits on this bus. */
  async answerApproval(sessionKey: string, answer: ApprovalAnswer): Promise<AnswerOutcome> {
    this.answers.push({ sessionKey, answer });
    return { kind: 'none' };
  }
}

export interface Harness {
  fake: FakeDiscord;
  channel: DiscordChannel;
  config: Config;
  redis: Redis;
  prefix: string;
  /** A user on the allow-list. */
  owner: FakeUser;
  close(): Promise<void>;
}

export interface HarnessOptions {
  redisUrl: string;
  /** The bus, or a builder given the harness's config (same prefix). */
  bus: ChannelBus | ((config: Config) => Promise<ChannelBus>);
  allowFrom?: (owner: FakeUser) => string[];
  channelOptions?: DiscordChannelOptions;
  /** Give the channel the bus's own Redis connection (as the gateway does) instead of a separate one. */
  useBusRedis?: boolean;
  token?: string;
  env?: Record<string, string>;
  /** @defaultValue silent */
  logger?: Logger;
}

/** Starts a fake Discord and a connected DiscordChannel. */
export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const token = 'test-token.discord.secret';
  const fake = await startFakeDiscord({ token });
  const owner: FakeUser = { id: fake.newId(), username: 'owner', global_name: 'The Owner' };
  const prefix = `test-${randomUUID()}`;
  const config = parseConfig({
    DISCORD_BOT_TOKEN: options.token ?? token,
    DISCORD_API_ROOT: fake.apiRoot,
    DISCORD_ALLOW_FROM: (options.allowFrom?.(owner) ?? [owner.id]).join(','),
    MAGPIE_QUEUE_PREFIX: prefix,
    REDIS_URL: options.redisUrl,
    MAGPIE_MAX_MEDIA_BYTES: '1000',
    ...options.env,
  });
  const redis = new Redis(options.redisUrl);
  const bus = typeof options.bus === 'function' ? await options.bus(config) : options.bus;
  const channelRedis = options.useBusRedis && bus instanceof Bus ? bus.redis : redis;
  const channel = new DiscordChannel(
    {
      config,
      bus,
      logger: options.logger ?? silentLogger(),
      pairing: new RedisPairingStore(channelRedis, prefix),
    },
    { typingIntervalMs: 100, bufferRetryMs: 50, readyTimeoutMs: 10_000, ...options.channelOptions },
  );
  return {
    fake,
    channel,
    config,
    redis,
    prefix,
    owner,
    async close() {
      await channel.stop();
      await fake.close();
      redis.disconnect();
    },
  };
}

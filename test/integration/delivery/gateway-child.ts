/**
 * A gateway's outbound delivery in a process of its own, for the tests that
 * SIGKILL it mid-delivery (order.test.ts): channel `test`, one message at a
 * time, a 1 s lock. Its channel records each message it sends on the Redis
 * list `<prefix>:platform` (what the platform saw) and never finishes sending
 * the message whose content is `hang`: it prints `sending <content>` and waits.
 * Prints `ready` once it takes jobs. With a fourth argument, a folder, it
 * records its consumers there (bus/dead-holders.ts) and keeps BullMQ's default
 * 30 s lock instead.
 *
 *   node --import tsx gateway-child.ts <redisUrl> <prefix> <hang> [consumers folder]
 */
import { parseConfig } from '../../../src/app/config.js';
import { Bus } from '../../../src/bus/bus.js';
import { DeadHolders } from '../../../src/bus/dead-holders.js';
import type { Channel } from '../../../src/channels/types.js';
import { OutboundDelivery } from '../../../src/delivery/outbound-delivery.js';
import { silentLogger } from '../../../src/log/index.js';
import type { OutboundMessage } from '../../../src/messages/messages.js';

const [url, prefix, hang, consumers] = process.argv.slice(2) as [string, string, string, string | undefined];
const logger = silentLogger();
const bus = await Bus.connect({
  config: parseConfig({ REDIS_URL: url, MAGPIE_QUEUE_PREFIX: prefix }),
  logger,
  ...(consumers ? { deadHolders: new DeadHolders(consumers, logger) } : {}),
});

const channel: Channel = {
  name: 'test',
  async start() {},
  async stop() {},
  async send(message: OutboundMessage) {
    if (message.content === hang) {
      process.stdout.write(`sending ${message.content}\n`);
      await new Promise(() => {});
    }
    await bus.redis.rpush(`${prefix}:platform`, message.content);
  },
  startActivity() {},
  stopActivity() {},
};

await OutboundDelivery.start({
  bus,
  channel,
  logger,
  concurrency: 1,
  tuning: consumers ? {} : { lockDurationMs: 1_000, stalledIntervalMs: 500 },
});
process.stdout.write('ready\n');

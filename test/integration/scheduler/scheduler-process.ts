/**
 * A worker-like process for the scheduler's multi-process tests (run with
 * `node --import tsx`): connects the real bus, starts the real scheduler with
 * a stand-in agent that counts heartbeat turns in Redis, logs JSON lines to
 * stdout, prints {"ready":true} once taking jobs, and closes on SIGTERM.
 * Env: REDIS_URL, MAGPIE_QUEUE_PREFIX, MAGPIE_WORKSPACE, MAGPIE_HEARTBEAT_INTERVAL, HB_REPLY.
 */
import type { TurnResult } from '../../../src/agent/types.js';
import { Bus } from '../../../src/bus/bus.js';
import { RedisStateStore } from '../../../src/bus/state.js';
import { parseConfig } from '../../../src/config/index.js';
import { createLogger } from '../../../src/log/index.js';
import { startScheduler } from '../../../src/scheduler/index.js';

const config = parseConfig(process.env);
const logger = createLogger({ level: 'info', destination: 1 });
const bus = await Bus.connect({ config, logger, url: config.redis.url! });
const reply = process.env.HB_REPLY ?? 'HEARTBEAT_OK';
const notUsed = async (): Promise<TurnResult> => {
  throw new Error('not used in this test process');
};
const agent = {
  processMessage: notUsed,
  processDirect: notUsed,
  async processHeartbeat(): Promise<TurnResult> {
    await bus.redis.incr(`${bus.prefix}:test:heartbeat-turns`);
    return {
      sessionKey: 'heartbeat',
      reply,
      target: { channel: 'system', chatId: 'heartbeat' },
      metrics: {
        sessionKey: 'heartbeat',
        llmCalls: 1,
        promptTokens: 0,
        completionTokens: 0,
        toolCalls: [],
        wallMs: 0,
        outcome: 'ok',
      },
    };
  },
};
const scheduler = await startScheduler({
  config,
  bus,
  agent,
  state: new RedisStateStore(bus.redis, bus.prefix),
  logger,
  tuning: { stalledIntervalMs: 1_000, lockDurationMs: 2_000 },
});
process.stdout.write(`${JSON.stringify({ ready: true, pid: process.pid })}\n`);
process.once('SIGTERM', () => {
  void scheduler
    .close()
    .then(() => bus.close())
    .then(() => process.exit(0));
});

/**
 * The budget tests' stack: the real agent (buildAgent) over the fake OpenAI
 * server, held to a Budget on the real Redis store, run by turn workers on
 * real Redis, with a recording channel and an injectable clock.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { buildAgent } from '../../../src/app/build-agent.js';
import { Budget } from '../../../src/budget/budget.js';
import { RedisBudgetStore } from '../../../src/bus/budget-store.js';
import { Bus } from '../../../src/bus/bus.js';
import type { Config } from '../../../src/config/index.js';
import { OutboundDelivery } from '../../../src/delivery/outbound-delivery.js';
import { silentLogger } from '../../../src/log/index.js';
import { TurnWorker } from '../../../src/worker/turn-worker.js';
import type { FakeOpenAI } from '../../fakes/openai-server.js';
import { RecordingChannel, testConfig } from '../bus/helpers.js';

/** A clock the test moves. */
export class TestClock {
  constructor(public ms: number) {}
  readonly now = () => this.ms;
}

/** A real store that also records each reservation's estimate and the calls in flight. */
export class RecordingBudgetStore extends RedisBudgetStore {
  readonly estimates: number[] = [];
  inFlight = 0;
  maxInFlight = 0;
  override async reserve(...args: Parameters<RedisBudgetStore['reserve']>) {
    const result = await super.reserve(...args);
    if (result.ok) {
      this.estimates.push(args[2].costNano);
      this.inFlight += 1;
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    }
    return result;
  }
  override async settle(...args: Parameters<RedisBudgetStore['settle']>) {
    this.inFlight -= 1;
    return super.settle(...args);
  }
  override async release(...args: Parameters<RedisBudgetStore['release']>) {
    this.inFlight -= 1;
    return super.release(...args);
  }
}

/** A workspace folder and a config over the fake model, with `env` on top. */
export async function budgetConfig(
  fake: FakeOpenAI,
  env: Record<string, string>,
): Promise<{ config: Config; workspace: string }> {
  const workspace = await mkdtemp(path.join(os.tmpdir(), 'magpie-budget-'));
  const config = testConfig(inject('redisUrl'), {
    MAGPIE_WORKSPACE: workspace,
    OPENAI_API_KEY: 'test-key',
    OPENAI_BASE_URL: fake.baseURL,
    MAGPIE_LLM_MAX_RETRIES: '0',
    MAGPIE_TIMEZONE: 'Europe/Berlin',
    ...env,
  });
  return { config, workspace };
}

/** One worker: its own bus connection, budget and agent, on the shared Redis and prefix. */
export async function startBudgetWorker(config: Config, clock: TestClock, concurrency = 4) {
  const logger = silentLogger();
  const bus = await Bus.connect({ config, logger, turnJobs: { backoffMs: 50 }, patient: true });
  const store = new RecordingBudgetStore(bus.redis, bus.prefix);
  const state = bus.stateStore();
  const budget = new Budget({
    config: config.budget,
    store,
    timezone: config.timezone,
    logger,
    now: clock.now,
    notify: async (content, id) => {
      const target = await state.getLastChannel();
      if (target) await bus.publishOutbound({ id, ...target, content, kind: 'message' });
    },
  });
  const { agent } = await buildAgent({
    config,
    logger,
    outbound: { publish: async () => {} },
    state,
    budget,
  });
  const worker = new TurnWorker({ bus, agent, logger, concurrency });
  await worker.start();
  return {
    bus,
    budget,
    store,
    agent,
    async close() {
      await worker.close();
      await bus.close();
    },
  };
}

/** The channel `test` delivering what the workers send (one gateway). */
export async function startGateway(config: Config) {
  const logger = silentLogger();
  const bus = await Bus.connect({ config, logger, patient: true });
  const channel = new RecordingChannel('test');
  const delivery = await OutboundDelivery.start({ bus, channel, logger });
  return {
    bus,
    channel,
    async close() {
      await delivery.close();
      await bus.close();
    },
  };
}

export async function removeWorkspace(workspace: string | undefined): Promise<void> {
  if (workspace) await rm(workspace, { recursive: true, force: true });
}

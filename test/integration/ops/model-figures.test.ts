/**
 * Which model answered, on real Redis: the recorder keeps each turn's model,
 * its calls by model and its fallback calls (old records read as none);
 * `magpie status` (JSON and text) lists the models of recent turns and what is
 * resting, and /metrics counts fallbacks, calls by model and cool-downs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TurnMetrics } from '../../../src/agent/types.js';
import { Bus } from '../../../src/bus/bus.js';
import { RedisCooldownStore } from '../../../src/bus/cooldown-store.js';
import { opsKeys } from '../../../src/bus/keys.js';
import { TurnRecorder } from '../../../src/bus/turn-recorder.js';
import { readTurns } from '../../../src/bus/turn-records.js';
import { silentLogger } from '../../../src/log/index.js';
import { createMetrics } from '../../../src/ops/metrics.js';
import { collectStatus } from '../../../src/ops/status.js';
import { formatStatus } from '../../../src/ops/status-format.js';
import { cooldownKeys } from '../../../src/providers/cooldown.js';
import { testConfig } from '../bus/helpers.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function turn(model: string, models: Record<string, number>, fallbacks: number): { metrics: TurnMetrics } {
  const llmCalls = Object.values(models).reduce((a, b) => a + b, 0);
  return {
    metrics: {
      sessionKey: 'telegram:42',
      llmCalls,
      promptTokens: 100,
      completionTokens: 10,
      toolCalls: [],
      wallMs: 300,
      outcome: 'ok',
      model,
      models,
      fallbacks,
    },
  };
}

describe('model figures', () => {
  it('are recorded per turn and shown by status and /metrics, with the models resting', async () => {
    const config = testConfig();
    const bus = await Bus.connect({ config, logger: silentLogger() });
    closers.push(() => bus.close());
    const recorder = new TurnRecorder({
      redis: bus.redis,
      prefix: bus.prefix,
      worker: 'w1',
      logger: silentLogger(),
    });
    await recorder.finished('t1', turn('main-model', { 'main-model': 1 }, 0));
    await recorder.finished('t2', turn('llama3.1', { 'main-model': 1, 'llama3.1': 2 }, 2));
    await recorder.finished('t3', turn('llama3.1', { 'llama3.1': 1 }, 1));
    await bus.redis.xadd(
      opsKeys.turns(bus.prefix),
      '*',
      'turn',
      JSON.stringify({
        turn: 'old',
        session: 'cli:x',
        worker: 'w',
        at: 1,
        wallMs: 5,
        llmCalls: 1,
        promptTokens: 1,
        completionTokens: 1,
        toolCalls: [],
        outcome: 'ok',
      }),
    );
    const [old, third] = await readTurns(bus.redis, bus.prefix);
    expect(old).toMatchObject({ fallbacks: 0, models: {} });
    expect(old?.model).toBeUndefined();
    expect(third).toMatchObject({ model: 'llama3.1', fallbacks: 1, models: { 'llama3.1': 1 } });

    const store = new RedisCooldownStore(bus.redis, bus.prefix);
    const keys = cooldownKeys('http://127.0.0.1:9/v1', 'main-model');
    await store.failed(
      keys.model,
      {
        label: 'main-model at http://127.0.0.1:9/v1',
        reason: 'the model endpoint failed (503): down',
        short: 'server error 503',
      },
      { baseMs: 60_000, maxMs: 600_000 },
    );

    const status = await collectStatus({
      reader: bus.opsReader,
      url: config.redis.url!,
      prefix: bus.prefix,
      workspace: config.workspace,
    });
    expect(status.models.recent).toEqual([
      { model: 'llama3.1', calls: 3, turns: 2 },
      { model: 'main-model', calls: 2, turns: 1 },
    ]);
    expect(status.models.fallbackCalls).toBe(3);
    expect(status.models.resting).toHaveLength(1);
    const text = formatStatus(status);
    expect(text).toContain(
      'Models     last 4 turns: llama3.1 3 calls, main-model 2 calls; 3 answered by a fallback',
    );
    expect(text).toMatch(
      /^ {2}main-model at http:\/\/127\.0\.0\.1:9\/v1: rests (59|60)s more after 1 failure \(the model endpoint failed \(503\): down\)$/m,
    );

    const metrics = await createMetrics(bus.opsReader).render();
    expect(metrics).toMatch(/^magpie_llm_fallbacks_total\{agent="main"\} 3$/m);
    expect(metrics).toMatch(/^magpie_llm_calls_by_model_total\{agent="main",model="llama3\.1"\} 3$/m);
    expect(metrics).toMatch(/^magpie_llm_calls_by_model_total\{agent="main",model="main-model"\} 2$/m);
    expect(metrics).toMatch(
      /^magpie_llm_cooldown_seconds\{agent="main",what="main-model at http:\/\/127\.0\.0\.1:9\/v1"\} (59|60)$/m,
    );
  });
});

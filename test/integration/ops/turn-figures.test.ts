/**
 * Per-turn figures on real Redis: the turn worker marks a running turn with
 * its LLM iteration, then moves its figures to the capped turns stream and
 * the totals; status, the turn readers and /metrics see them from another
 * connection.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TurnOptions, TurnResult } from '../../../src/agent/types.js';
import { Bus } from '../../../src/bus/bus.js';
import { opsKeys } from '../../../src/bus/keys.js';
import { TurnRecorder } from '../../../src/bus/turn-recorder.js';
import { readRunning, readTurns } from '../../../src/bus/turn-records.js';
import { WorkerHeartbeat } from '../../../src/bus/worker-beats.js';
import { silentLogger } from '../../../src/log/index.js';
import type { InboundMessage } from '../../../src/messages/messages.js';
import { sessionKeyOf } from '../../../src/messages/messages.js';
import { createMetrics } from '../../../src/ops/metrics.js';
import { collectStatus } from '../../../src/ops/status.js';
import { TurnWorker } from '../../../src/worker/turn-worker.js';
import { MessageOnlyAgent, testConfig, waitFor } from '../bus/helpers.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A fake agent: reports iteration 1, then 2, then waits for `release()`; answers with usage figures. */
class GatedAgent extends MessageOnlyAgent {
  private release: () => void = () => {};
  private readonly gate = new Promise<void>((resolve) => {
    this.release = resolve;
  });
  open(): void {
    this.release();
  }
  async processMessage(
    messages: InboundMessage | InboundMessage[],
    options: TurnOptions = {},
  ): Promise<TurnResult> {
    const head = (Array.isArray(messages) ? messages : [messages])[0] as InboundMessage;
    options.onIteration?.(1);
    options.onIteration?.(2);
    await this.gate;
    const sessionKey = sessionKeyOf(head);
    return {
      sessionKey,
      reply: 'done',
      target: { channel: head.channel, chatId: head.chatId },
      metrics: {
        sessionKey,
        llmCalls: 2,
        promptTokens: 120,
        completionTokens: 30,
        toolCalls: [{ name: 'read_file', ms: 12, ok: true }],
        wallMs: 1500,
        outcome: 'ok',
      },
    };
  }
}

/** Minimal check of the Prometheus text format: every sample line is `name{labels} value`. */
function parsePrometheus(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (-?(?:[0-9.]+(?:e[+-]?\d+)?|\+Inf|NaN))$/.exec(line);
    if (!m) throw new Error(`not Prometheus text: ${line}`);
    samples.set(m[1] as string, Number(m[2]));
  }
  return samples;
}

describe('turn figures', () => {
  it('records the running turn with its iteration, then the finished turn, totals and metrics', async () => {
    const config = testConfig();
    const logger = silentLogger();
    const bus = await Bus.connect({ config, logger });
    closers.push(() => bus.close());
    const agent = new GatedAgent();
    const worker = new TurnWorker({ bus, agent, logger, concurrency: 2 });
    await worker.start();
    closers.push(() => worker.close());
    const beat = new WorkerHeartbeat({
      redis: bus.redis,
      prefix: bus.prefix,
      id: worker.id,
      concurrency: 2,
      logger,
    });
    await beat.start();
    closers.push(() => beat.close());

    await bus.publishInbound({ id: 'm1', channel: 'cli', chatId: 'ops', senderId: 'me', content: 'hello' });
    await waitFor(
      async () => (await readRunning(bus.redis, bus.prefix))[0]?.iteration === 2,
      5_000,
      'iteration 2',
    );
    const status = await collectStatus({
      reader: bus.opsReader,
      url: bus.url,
      prefix: bus.prefix,
      workspace: config.workspace,
    });
    expect(status.workers.map((w) => w.id)).toEqual([worker.id]);
    expect(status.running).toHaveLength(1);
    expect(status.running[0]).toMatchObject({ session: 'cli:ops', iteration: 2, worker: worker.id });
    expect(status.queues.find((q) => q.name === 'inbound')?.active).toBe(1);

    agent.open();
    await waitFor(
      async () => (await readTurns(bus.redis, bus.prefix)).length === 1,
      5_000,
      'the turn record',
    );
    const [turn] = await readTurns(bus.redis, bus.prefix);
    expect(turn).toMatchObject({
      session: 'cli:ops',
      outcome: 'ok',
      llmCalls: 2,
      promptTokens: 120,
      completionTokens: 30,
      wallMs: 1500,
    });
    expect(await readRunning(bus.redis, bus.prefix)).toEqual([]);

    const samples = parsePrometheus(await createMetrics(bus.opsReader).render());
    expect(samples.get('magpie_turns_total{agent="main",outcome="ok"}')).toBe(1);
    expect(samples.get('magpie_llm_prompt_tokens_total{agent="main"}')).toBe(120);
    expect(samples.get('magpie_llm_completion_tokens_total{agent="main"}')).toBe(30);
    expect(samples.get('magpie_turn_duration_seconds_bucket{agent="main",le="1"}')).toBe(0);
    expect(samples.get('magpie_turn_duration_seconds_bucket{agent="main",le="2"}')).toBe(1);
    expect(samples.get('magpie_turn_duration_seconds_count{agent="main"}')).toBe(1);
    expect(samples.get('magpie_workers_alive{agent="main"}')).toBe(1);
    expect(samples.has('magpie_queue_jobs{agent="main",queue="inbound",state="waiting"}')).toBe(true);
  });

  it('caps the stream and leaves out running turns of workers that are gone', async () => {
    const config = testConfig();
    const logger = silentLogger();
    const bus = await Bus.connect({ config, logger });
    closers.push(() => bus.close());
    const recorder = new TurnRecorder({
      redis: bus.redis,
      prefix: bus.prefix,
      worker: 'worker-dead',
      logger,
      maxLen: 10,
    });
    for (let i = 0; i < 300; i++) {
      await recorder.finished(`t${i}`, { error: 'model down', wallMs: 5, session: 'cli:x' });
    }
    const length = await bus.redis.xlen(opsKeys.turns(bus.prefix));
    expect(length).toBeLessThan(300);
    await recorder.started('t-stale', 'cli:stale');
    const status = await collectStatus({
      reader: bus.opsReader,
      url: bus.url,
      prefix: bus.prefix,
      workspace: config.workspace,
    });
    expect(status.running).toEqual([]);
    expect(status.errors[0]).toMatchObject({ source: 'turn cli:x', message: 'model down' });
  });
});

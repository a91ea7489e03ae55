/** The turn meter's steps: each model and tool call with its start (after the turn began), time and outcome. */
import { describe, expect, it } from 'vitest';
import { TurnMeter } from '../../../src/agent/turn-metrics.js';
import { MAX_TURN_STEPS } from '../../../src/messages/turn-metrics.js';

describe('TurnMeter steps', () => {
  it('records model calls (tokens, fallback, failure) and tool calls at their times', () => {
    let now = 100;
    const meter = new TurnMeter('cli:a', () => now);
    now = 110;
    const started = meter.now();
    now = 150;
    meter.llmCall(
      { promptTokens: 40, cachedTokens: 8, completionTokens: 3, totalTokens: 43 },
      { model: 'backup', fallbacks: 1 },
      { started, model: 'main' },
    );
    const toolStart = meter.now();
    now = 175;
    meter.toolCall('exec', now - toolStart, false, toolStart);
    const failedStart = meter.now();
    now = 180;
    meter.llmCall(undefined, undefined, { started: failedStart, model: 'main', ok: false });
    const metrics = meter.finish('error');
    expect(metrics.steps).toEqual([
      {
        kind: 'model',
        name: 'backup',
        at: 10,
        ms: 40,
        ok: true,
        tokens: { input: 40, cached: 8, output: 3 },
        fallback: true,
      },
      { kind: 'tool', name: 'exec', at: 50, ms: 25, ok: false },
      { kind: 'model', name: 'main', at: 75, ms: 5, ok: false },
    ]);
    expect(metrics.toolCalls).toEqual([{ name: 'exec', ms: 25, ok: false }]);
  });

  it('keeps at most MAX_TURN_STEPS steps, still counting every call', () => {
    const meter = new TurnMeter('cli:a', () => 0);
    for (let i = 0; i < MAX_TURN_STEPS + 5; i++) meter.toolCall('read_file', 0, true, 0);
    const metrics = meter.finish('ok');
    expect(metrics.steps).toHaveLength(MAX_TURN_STEPS);
    expect(metrics.toolCalls).toHaveLength(MAX_TURN_STEPS + 5);
  });

  it('has no steps for a turn without calls (records stay as before)', () => {
    expect(new TurnMeter('cli:a').finish('command').steps).toBeUndefined();
  });
});

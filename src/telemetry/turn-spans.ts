/**
 * A turn's model and tool calls as child spans of its turn span, made from the
 * steps the agent timed (messages/turn-metrics.ts) once the turn is over: the
 * agent core needs no tracing of its own, and the spans carry what the
 * dashboard's timeline shows. Names and attributes follow the gen_ai semantic
 * conventions (`chat <model>`, `execute_tool <name>`); never arguments, results or text.
 */
import type { TurnStep } from '../messages/turn-metrics.js';
import type { SpanAttributes, TraceSpan, Tracing } from './tracing.js';

/** One child span of `turn` per step; `startedAt` is when the turn began (ms since the epoch). */
export function stepSpans(tracing: Tracing, turn: TraceSpan, startedAt: number, steps: readonly TurnStep[]) {
  if (!tracing.enabled || !turn.context) return;
  for (const step of steps) {
    const start = startedAt + step.at;
    const span = tracing.start(spanName(step), {
      parent: turn.context,
      kind: step.kind === 'model' ? 'client' : 'internal',
      startTime: start,
      attributes: attributesOf(step),
    });
    if (!step.ok) span.fail(step.kind === 'model' ? 'model call failed' : 'tool call failed');
    span.end(start + step.ms);
  }
}

function spanName(step: TurnStep): string {
  return step.kind === 'model' ? `chat ${step.name}` : `execute_tool ${step.name}`;
}

function attributesOf(step: TurnStep): SpanAttributes {
  if (step.kind === 'tool')
    return {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': step.name,
      'magpie.tool.outcome': step.ok ? 'ok' : 'error',
      ...(step.ok ? {} : { 'error.type': 'tool_error' }),
    };
  return {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'openai',
    'gen_ai.request.model': step.name,
    'gen_ai.response.model': step.name,
    'gen_ai.usage.input_tokens': step.tokens?.input,
    'gen_ai.usage.output_tokens': step.tokens?.output,
    'gen_ai.usage.cache_read.input_tokens': step.tokens?.cached,
    'magpie.model.fallback': step.fallback,
    ...(step.ok ? {} : { 'error.type': 'model_error' }),
  };
}

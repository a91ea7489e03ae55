/**
 * The span attributes magpie may set, and the filter every span applies: a
 * name not on the list is dropped, a string is cut to {@link MAX_TEXT}. Message
 * text, tool arguments and results and secrets have no name here, so a careless
 * hook cannot export them. Names follow OpenTelemetry's semantic conventions
 * where they exist (gen_ai.* for model and tool calls, messaging.* for the bus).
 */
import type { SpanAttributes, SpanAttributeValue } from './tracing.js';

/** Longest string value kept (a model id, a queue name, an error code). */
export const MAX_TEXT = 128;

export const ATTRIBUTE_NAMES = new Set([
  // The bus hop.
  'messaging.system',
  'messaging.operation.type',
  'messaging.destination.name',
  'messaging.batch.message_count',
  // Model calls (gen_ai semantic conventions).
  'gen_ai.operation.name',
  'gen_ai.provider.name',
  'gen_ai.request.model',
  'gen_ai.response.model',
  'gen_ai.usage.input_tokens',
  'gen_ai.usage.output_tokens',
  'gen_ai.usage.cache_read.input_tokens',
  'gen_ai.tool.name',
  'error.type',
  // magpie's own.
  'magpie.role',
  'magpie.channel',
  'magpie.turn.id',
  'magpie.turn.outcome',
  'magpie.turn.llm_calls',
  'magpie.turn.tool_calls',
  'magpie.model.fallback',
  'magpie.tool.outcome',
  'magpie.approval.decision',
  'magpie.message.kind',
  'magpie.helper.kind',
]);

/** The attributes of `input` that may be exported: listed names, defined values, strings cut short. */
export function allowedAttributes(input: SpanAttributes | undefined): Record<string, SpanAttributeValue> {
  const out: Record<string, SpanAttributeValue> = {};
  if (!input) return out;
  for (const [name, value] of Object.entries(input)) {
    if (value === undefined || !ATTRIBUTE_NAMES.has(name)) continue;
    if (typeof value === 'string') out[name] = value.slice(0, MAX_TEXT);
    else if (typeof value === 'number' ? Number.isFinite(value) : typeof value === 'boolean')
      out[name] = value;
  }
  return out;
}

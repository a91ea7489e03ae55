/**
 * The tracing facade magpie's code calls: spans with explicit parents (a W3C
 * `traceparent` carried in message metadata across the bus), attributes from a
 * fixed list, and nothing else. {@link NO_TRACING} does nothing and loads
 * nothing; `start-tracing.ts` returns the OpenTelemetry one only when the
 * OTEL_* variables ask for it, so no OpenTelemetry module is loaded otherwise.
 */

/** An attribute's value (OpenTelemetry's primitive kinds). */
export type SpanAttributeValue = string | number | boolean;

/** Attributes of a span: only names in `attributes.ts`'s list are kept; undefined values are dropped. */
export type SpanAttributes = Readonly<Record<string, SpanAttributeValue | undefined>>;

/** A span's W3C trace context, as carried in `metadata.trace` of bus messages. */
export interface TraceParent {
  traceparent: string;
  tracestate?: string;
}

/** OpenTelemetry's span kinds magpie uses. */
export type SpanKind = 'internal' | 'producer' | 'consumer' | 'client';

export interface SpanOptions {
  /** The parent span (from a message's metadata); absent: the span starts a trace. */
  parent?: TraceParent | undefined;
  /** Spans this one follows from without being their child (a batch's later messages, a helper's asker). */
  links?: readonly TraceParent[];
  attributes?: SpanAttributes;
  /** @defaultValue 'internal' */
  kind?: SpanKind;
  /** When the step began (ms since the epoch), for steps recorded after they ran. @defaultValue now */
  startTime?: number;
}

/** One started span. */
export interface TraceSpan {
  /** This span's context, to carry onward; undefined when tracing is off or the span is not sampled. */
  readonly context: TraceParent | undefined;
  /** Adds attributes (filtered like the start's). */
  set(attributes: SpanAttributes): void;
  /** Marks the span failed with a short code or line (never message text or a secret). */
  fail(reason: string): void;
  /** Ends the span, at `endTime` (ms since the epoch) when given. Only the first call counts. */
  end(endTime?: number): void;
}

/** Starts spans; one per process, built by `startTracing`. */
export interface Tracing {
  /** True when spans are exported. */
  readonly enabled: boolean;
  start(name: string, options?: SpanOptions): TraceSpan;
  /** Sends the spans ended so far. */
  flush(): Promise<void>;
  /** Sends what is left and stops. Idempotent. */
  shutdown(): Promise<void>;
}

const NO_SPAN: TraceSpan = {
  context: undefined,
  set: () => undefined,
  fail: () => undefined,
  end: () => undefined,
};

/** Tracing off: every span is the same inert object. */
export const NO_TRACING: Tracing = {
  enabled: false,
  start: () => NO_SPAN,
  flush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};

const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * The trace context in a message's metadata (`metadata.trace`), when it is well-formed: metadata
 * may come from anywhere, so anything else is ignored (the span then starts a trace of its own).
 */
export function traceOf(metadata: Readonly<Record<string, unknown>> | undefined): TraceParent | undefined {
  const trace = metadata?.trace;
  if (typeof trace !== 'object' || trace === null) return undefined;
  const { traceparent, tracestate } = trace as Record<string, unknown>;
  if (typeof traceparent !== 'string' || !TRACEPARENT.test(traceparent)) return undefined;
  return typeof tracestate === 'string' && tracestate.length <= 512 && /^[\x20-\x7e]*$/.test(tracestate)
    ? { traceparent, tracestate }
    : { traceparent };
}

/** `metadata` carrying `span`'s context as `trace` (unchanged when the span has none). */
export function withTrace<T extends Record<string, unknown>>(metadata: T, span: TraceSpan): T {
  return span.context ? { ...metadata, trace: span.context } : metadata;
}

/**
 * The OpenTelemetry side of the facade, loaded by `start-tracing.ts` with a
 * dynamic import only when tracing is on: the only file that imports
 * `@opentelemetry/*`. Spans get explicit parents (no global context manager,
 * nothing registered globally) and go through a batch processor to the
 * OTLP/HTTP JSON exporter. A failed export is logged as one warning until
 * exports work again; spans are never allowed to fail a turn.
 */
import {
  type Attributes,
  type Context,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { type ExportResult, ExportResultCode, parseTraceParent, TraceState } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { SamplerName, TracingConfig } from '../config/tracing.js';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { allowedAttributes } from './attributes.js';
import type { SpanKind as FacadeKind, SpanAttributes, TraceParent, TraceSpan, Tracing } from './tracing.js';

export interface OtelTracingOptions {
  config: TracingConfig;
  /** `service.name` when OTEL_SERVICE_NAME is unset (`magpie-<role>`). */
  service: string;
  logger: Logger;
  /** Wait between exports of ended spans. @defaultValue 1000 */
  exportDelayMs?: number;
}

const KINDS: Record<FacadeKind, SpanKind> = {
  internal: SpanKind.INTERNAL,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
  client: SpanKind.CLIENT,
};

/** Tracing through the OpenTelemetry SDK. */
export function otelTracing(options: OtelTracingOptions): Tracing {
  const { config, logger } = options;
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName ?? options.service }),
    sampler: samplerOf(config.sampler, config.ratio),
    spanLimits: { attributeValueLengthLimit: 256, attributeCountLimit: 32, linkCountLimit: 16 },
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new WarningExporter(
          new OTLPTraceExporter({ url: config.url, headers: { ...config.headers } }),
          logger,
        ),
        scheduledDelayMillis: options.exportDelayMs ?? 1000,
      }),
    ],
  });
  const tracer = provider.getTracer('magpie');
  let stopped: Promise<void> | undefined;
  return {
    enabled: true,
    start(name, spanOptions = {}) {
      const links: Link[] = [];
      for (const link of spanOptions.links ?? []) {
        const context = spanContextOf(link);
        if (context) links.push({ context });
      }
      const span = tracer.startSpan(
        name,
        {
          kind: KINDS[spanOptions.kind ?? 'internal'],
          attributes: allowedAttributes(spanOptions.attributes) as Attributes,
          links,
          ...(spanOptions.startTime === undefined ? {} : { startTime: spanOptions.startTime }),
        },
        parentContext(spanOptions.parent),
      );
      return facadeSpan(span);
    },
    // A failed export is the exporter's one warning, not the caller's error.
    flush: () => provider.forceFlush().catch(() => undefined),
    shutdown() {
      stopped ??= provider.shutdown().catch((err: unknown) => {
        logger.warn({ err: describeError(err) }, 'traces not all sent at shutdown');
      });
      return stopped;
    },
  };
}

function facadeSpan(span: Span): TraceSpan {
  const context = carrierOf(span.spanContext());
  let ended = false;
  return {
    context,
    set(attributes: SpanAttributes) {
      span.setAttributes(allowedAttributes(attributes) as Attributes);
    },
    fail(reason: string) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: reason.slice(0, 128) });
    },
    end(endTime?: number) {
      if (ended) return;
      ended = true;
      span.end(endTime);
    },
  };
}

/** The W3C form of a span context. */
function carrierOf(context: SpanContext): TraceParent {
  const flags = (context.traceFlags & 0xff).toString(16).padStart(2, '0');
  const traceparent = `00-${context.traceId}-${context.spanId}-${flags}`;
  const tracestate = context.traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

/** The span context a carried `traceparent` names, or undefined when it is not valid. */
function spanContextOf(carrier: TraceParent): SpanContext | undefined {
  const parsed = parseTraceParent(carrier.traceparent);
  if (!parsed || !trace.isSpanContextValid(parsed)) return undefined;
  return {
    ...parsed,
    isRemote: true,
    ...(carrier.tracestate ? { traceState: new TraceState(carrier.tracestate) } : {}),
  };
}

function parentContext(parent: TraceParent | undefined): Context {
  const context = parent ? spanContextOf(parent) : undefined;
  return context ? trace.setSpanContext(ROOT_CONTEXT, context) : ROOT_CONTEXT;
}

/** OTEL_TRACES_SAMPLER's samplers. */
function samplerOf(name: SamplerName, ratio: number): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** The exporter, with one warning when exports start failing and one line when they work again. */
class WarningExporter implements SpanExporter {
  private failing = false;

  constructor(
    private readonly inner: SpanExporter,
    private readonly logger: Logger,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      if (result.code !== ExportResultCode.SUCCESS && !this.failing) {
        this.failing = true;
        this.logger.warn(
          { err: result.error ? describeError(result.error) : 'export failed' },
          'traces not sent: the OTLP endpoint did not take them (tracing goes on; spans may be lost)',
        );
      } else if (result.code === ExportResultCode.SUCCESS && this.failing) {
        this.failing = false;
        this.logger.info('traces are sent again');
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

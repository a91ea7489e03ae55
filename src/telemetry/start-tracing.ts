/**
 * Starts tracing for one process: {@link NO_TRACING} when the config says it is
 * off (nothing of OpenTelemetry is loaded), else the SDK, loaded here with a
 * dynamic import so start-up without tracing is unchanged.
 */
import type { TracingConfig } from '../config/tracing.js';
import type { Logger } from '../log/index.js';
import { NO_TRACING, type Tracing } from './tracing.js';

export interface StartTracingOptions {
  /** `config.tracing`: undefined is off. */
  config: TracingConfig | undefined;
  /** `service.name` when OTEL_SERVICE_NAME is unset, e.g. `magpie-worker`. */
  service: string;
  logger: Logger;
  /** Wait between exports of ended spans. @defaultValue 1000 */
  exportDelayMs?: number;
}

/** The process's tracing. */
export async function startTracing(options: StartTracingOptions): Promise<Tracing> {
  const { config } = options;
  if (!config) return NO_TRACING;
  const { otelTracing } = await import('./otel.js');
  const tracing = otelTracing({ ...options, config });
  options.logger.info(
    { endpoint: new URL(config.url).origin, sampler: config.sampler },
    'tracing on: spans go to the OTLP endpoint',
  );
  return tracing;
}

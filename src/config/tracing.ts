/**
 * OpenTelemetry's standard variables, as magpie reads them: tracing is on when
 * an OTLP endpoint is set (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or
 * OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`) and neither OTEL_SDK_DISABLED nor
 * OTEL_TRACES_EXPORTER=none turns it off. Spans go as OTLP/HTTP JSON. The
 * headers may hold a collector's key: they are secrets (config/secret-env.ts).
 */
import type { z } from 'zod';
import { ConfigError } from '../errors/index.js';
import { boolean, optionalChoice, optionalText, optionalUrl } from './env-values.js';

export const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type SamplerName = (typeof SAMPLERS)[number];

export const TRACING_ENV = {
  OTEL_SDK_DISABLED: boolean,
  OTEL_TRACES_EXPORTER: optionalChoice(['otlp', 'none'] as const),
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalUrl(),
  OTEL_EXPORTER_OTLP_PROTOCOL: optionalText,
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: optionalText,
  OTEL_EXPORTER_OTLP_HEADERS: optionalText,
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: optionalText,
  OTEL_SERVICE_NAME: optionalText,
  OTEL_TRACES_SAMPLER: optionalChoice(SAMPLERS),
  OTEL_TRACES_SAMPLER_ARG: optionalText.refine(
    (v) => v === undefined || (Number.isFinite(Number(v)) && Number(v) >= 0 && Number(v) <= 1),
    { message: 'must be a number from 0 to 1 (the share of traces kept)' },
  ),
};

type TracingEnv = { [K in keyof typeof TRACING_ENV]: z.infer<(typeof TRACING_ENV)[K]> };

/** Tracing's settings; `undefined` in Config when tracing is off. */
export interface TracingConfig {
  /** Where spans are posted (OTLP/HTTP, JSON). */
  url: string;
  /** Headers sent with every export (a collector's key). Secret. */
  headers: Readonly<Record<string, string>>;
  /** `service.name` of the spans; absent: `magpie-<role>`. */
  serviceName: string | undefined;
  sampler: SamplerName;
  /** The ratio of the *traceidratio samplers. @defaultValue 1 */
  ratio: number;
}

/** The tracing settings from the variables, or undefined when tracing is off. @throws ConfigError */
export function tracingConfig(e: TracingEnv): TracingConfig | undefined {
  if (e.OTEL_SDK_DISABLED || e.OTEL_TRACES_EXPORTER === 'none') return undefined;
  const url = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? tracesUrl(e.OTEL_EXPORTER_OTLP_ENDPOINT);
  if (url === undefined) return undefined;
  if (!/^https?:$/.test(new URL(url).protocol))
    throw new ConfigError('OTEL_EXPORTER_OTLP_ENDPOINT must start with http:// or https://');
  const protocol = e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? e.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (protocol !== undefined && protocol !== 'http/json' && protocol !== 'http/protobuf')
    throw new ConfigError(
      `OTEL_EXPORTER_OTLP_PROTOCOL "${protocol}" is not supported: magpie exports OTLP over HTTP (JSON); use the collector's HTTP port (4318)`,
    );
  return {
    url,
    headers: {
      ...parseHeaders('OTEL_EXPORTER_OTLP_HEADERS', e.OTEL_EXPORTER_OTLP_HEADERS),
      ...parseHeaders('OTEL_EXPORTER_OTLP_TRACES_HEADERS', e.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
    },
    serviceName: e.OTEL_SERVICE_NAME,
    sampler: e.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on',
    ratio: e.OTEL_TRACES_SAMPLER_ARG === undefined ? 1 : Number(e.OTEL_TRACES_SAMPLER_ARG),
  };
}

/** The signal-specific URL from the base endpoint, as the OTLP exporter specification builds it. */
function tracesUrl(endpoint: string | undefined): string | undefined {
  if (endpoint === undefined) return undefined;
  return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}

/**
 * `key1=value1,key2=value2` (values percent-encoded) as the specification writes headers.
 * A malformed entry fails without echoing it (it may hold a key).
 */
function parseHeaders(variable: string, text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (text === undefined) return out;
  for (const [index, entry] of text.split(',').entries()) {
    if (entry.trim() === '') continue;
    const eq = entry.indexOf('=');
    const name = eq > 0 ? entry.slice(0, eq).trim() : '';
    let value: string | undefined;
    try {
      value = decodeURIComponent(entry.slice(eq + 1).trim());
    } catch {
      value = undefined;
    }
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || value === undefined || /[\r\n]/.test(value))
      throw new ConfigError(
        `${variable}: entry ${index + 1} is not name=value (expected e.g. authorization=Bearer%20…)`,
      );
    out[name.toLowerCase()] = value;
  }
  return out;
}

export type { TracingEnv };

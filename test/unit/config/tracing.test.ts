/** The OTEL_* variables: tracing off unless an endpoint is set; bad values are one clear line that echoes no header. */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { isSecretEnvName } from '../../../src/config/secret-env.js';

describe('tracing config', () => {
  it('is off without an OTLP endpoint, and when OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none says so', () => {
    expect(parseConfig({}).tracing).toBeUndefined();
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    expect(parseConfig({ ...endpoint, OTEL_SDK_DISABLED: 'true' }).tracing).toBeUndefined();
    expect(parseConfig({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).tracing).toBeUndefined();
  });

  it('builds the traces URL from the base endpoint; the traces endpoint wins as given', () => {
    expect(parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/' }).tracing?.url).toBe(
      'http://127.0.0.1:4318/v1/traces',
    );
    const both = parseConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:9999/custom',
    });
    expect(both.tracing?.url).toBe('http://127.0.0.1:9999/custom');
  });

  it('reads the headers (percent-decoded, traces-specific ones win), the service name and the sampler', () => {
    const tracing = parseConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
      OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20abc,x-team=one',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-team=two',
      OTEL_SERVICE_NAME: 'home-assistant',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    }).tracing;
    expect(tracing?.headers).toEqual({ authorization: 'Bearer abc', 'x-team': 'two' });
    expect(tracing?.serviceName).toBe('home-assistant');
    expect(tracing?.sampler).toBe('parentbased_traceidratio');
    expect(tracing?.ratio).toBe(0.25);
  });

  it('refuses a bad value with one line naming the variable, never echoing a header value', () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    expect(() => parseConfig({ ...base, OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow(/OTEL_TRACES_SAMPLER/);
    expect(() => parseConfig({ ...base, OTEL_TRACES_SAMPLER_ARG: '2' })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
    expect(() => parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
    expect(() => parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://127.0.0.1' })).toThrow(
      /http:\/\/ or https:\/\//,
    );
    expect(() => parseConfig({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/grpc.*HTTP/);
    let message = '';
    try {
      parseConfig({ ...base, OTEL_EXPORTER_OTLP_HEADERS: 'authorization=ok,secret-value-no-equals' });
    } catch (err) {
      message = String(err);
    }
    expect(message).toMatch(/OTEL_EXPORTER_OTLP_HEADERS: entry 2/);
    expect(message).not.toContain('secret-value');
    expect(() => parseConfig({ ...base, OTEL_EXPORTER_OTLP_HEADERS: 'x=%0d%0aInjected: 1' })).toThrow(
      /OTEL_EXPORTER_OTLP_HEADERS/,
    );
  });

  it('counts the exporter headers as secrets (redacted, shed from the environment)', () => {
    expect(isSecretEnvName('OTEL_EXPORTER_OTLP_HEADERS')).toBe(true);
    expect(isSecretEnvName('OTEL_EXPORTER_OTLP_TRACES_HEADERS')).toBe(true);
    expect(isSecretEnvName('OTEL_EXPORTER_OTLP_ENDPOINT')).toBe(false);
  });
});

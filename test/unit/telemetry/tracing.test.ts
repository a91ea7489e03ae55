/**
 * The tracing facade: the inert one when off, the OpenTelemetry one exporting
 * to the fake OTLP receiver when on. Parents and links from carried contexts,
 * the attribute allow-list (what is not listed never leaves), hostile
 * `metadata.trace` ignored, the sampler obeyed, an unreachable collector one warning.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { silentLogger } from '../../../src/log/index.js';
import { allowedAttributes } from '../../../src/telemetry/attributes.js';
import { startTracing } from '../../../src/telemetry/start-tracing.js';
import { NO_TRACING, type Tracing, traceOf, withTrace } from '../../../src/telemetry/tracing.js';
import { capturingLogger } from '../../fakes/logger.js';
import { closedPort } from '../../fakes/net.js';
import { type OtlpReceiver, startOtlpReceiver } from '../../fakes/otlp-receiver.js';

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

let receiver: OtlpReceiver | undefined;
let tracing: Tracing | undefined;
afterEach(async () => {
  await tracing?.shutdown();
  await receiver?.close();
  tracing = undefined;
  receiver = undefined;
});

async function tracingTo(env: Record<string, string> = {}, logger = silentLogger()): Promise<Tracing> {
  receiver = await startOtlpReceiver();
  const config = parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, ...env }).tracing;
  tracing = await startTracing({ config, service: 'magpie-test', logger, exportDelayMs: 50 });
  return tracing;
}

describe('tracing off', () => {
  it('is the inert facade: spans carry no context and metadata stays as it was', async () => {
    const off = await startTracing({ config: undefined, service: 'x', logger: silentLogger() });
    expect(off).toBe(NO_TRACING);
    const span = off.start('publish inbound', { attributes: { 'magpie.channel': 'cli' } });
    expect(span.context).toBeUndefined();
    const metadata = { replyAddress: 'a' };
    expect(withTrace(metadata, span)).toBe(metadata);
  });
});

describe('traceOf: metadata.trace may come from anywhere', () => {
  it('takes a well-formed traceparent and refuses anything else', () => {
    expect(traceOf({ trace: { traceparent: TRACEPARENT } })).toEqual({ traceparent: TRACEPARENT });
    expect(traceOf({ trace: { traceparent: TRACEPARENT, tracestate: 'a=1' } })).toEqual({
      traceparent: TRACEPARENT,
      tracestate: 'a=1',
    });
    for (const trace of [
      TRACEPARENT,
      [TRACEPARENT],
      { traceparent: `${TRACEPARENT}\nX-Evil: 1` },
      { traceparent: TRACEPARENT.toUpperCase() },
      { traceparent: 'hello' },
      { traceparent: 42 },
      null,
    ])
      expect(traceOf({ trace })).toBeUndefined();
    // A tracestate too long or with control characters is dropped, the parent kept.
    expect(traceOf({ trace: { traceparent: TRACEPARENT, tracestate: 'x'.repeat(600) } })).toEqual({
      traceparent: TRACEPARENT,
    });
    expect(traceOf({ trace: { traceparent: TRACEPARENT, tracestate: 'a=1\r\nb' } })).toEqual({
      traceparent: TRACEPARENT,
    });
  });
});

describe('allowedAttributes', () => {
  it('keeps listed names only, cuts long strings and drops undefined and non-finite values', () => {
    expect(
      allowedAttributes({
        'gen_ai.tool.name': 'exec',
        'gen_ai.prompt': 'the user said something private',
        'gen_ai.tool.call.arguments': '{"command":"cat secrets"}',
        'message.text': 'hello',
        'magpie.channel': 'x'.repeat(500),
        'gen_ai.usage.input_tokens': Number.NaN,
        'gen_ai.usage.output_tokens': undefined,
        'magpie.model.fallback': false,
      }),
    ).toEqual({
      'gen_ai.tool.name': 'exec',
      'magpie.channel': 'x'.repeat(128),
      'magpie.model.fallback': false,
    });
  });
});

describe('tracing on', () => {
  it('exports spans with their parents and links, continuing a carried trace; unlisted attributes never leave', async () => {
    const on = await tracingTo({ OTEL_SERVICE_NAME: 'home' });
    const root = on.start('publish inbound', { kind: 'producer', attributes: { 'magpie.channel': 'web' } });
    const carried = withTrace({}, root);
    const child = on.start('process inbound', {
      kind: 'consumer',
      parent: traceOf(carried),
      links: [{ traceparent: TRACEPARENT }],
      attributes: { 'magpie.turn.id': 'abc', content: 'private words' },
    });
    child.set({ 'magpie.turn.outcome': 'ok', 'tool.result': 'private result' });
    child.fail('INVALID_MESSAGE');
    child.end();
    child.end(); // a second end is ignored
    root.end();
    const spans = await (receiver as OtlpReceiver).until((all) => all.length >= 2);
    expect(spans).toHaveLength(2);
    const [exportedRoot, exportedChild] = ['publish inbound', 'process inbound'].map((n) =>
      spans.find((s) => s.name === n),
    );
    expect(exportedRoot?.service).toBe('home');
    expect(exportedRoot?.kind).toBe(4);
    expect((carried as { trace?: { traceparent: string } }).trace?.traceparent).toBe(
      `00-${exportedRoot?.traceId}-${exportedRoot?.spanId}-01`,
    );
    expect(exportedChild?.traceId).toBe(exportedRoot?.traceId);
    expect(exportedChild?.parentSpanId).toBe(exportedRoot?.spanId);
    expect(exportedChild?.links).toEqual([
      { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' },
    ]);
    expect(exportedChild?.attributes).toEqual({ 'magpie.turn.id': 'abc', 'magpie.turn.outcome': 'ok' });
    expect(exportedChild?.status).toBe(2);
    const body = (receiver as OtlpReceiver).bodies.join('\n');
    expect(body).not.toContain('private');
  });

  it('takes explicit start and end times (steps recorded after they ran)', async () => {
    const on = await tracingTo();
    const start = Date.now() - 5_000;
    on.start('execute_tool exec', { startTime: start }).end(start + 1_234);
    const [span] = await (receiver as OtlpReceiver).until((all) => all.length >= 1);
    expect(span?.startMs).toBe(start);
    expect((span?.endMs ?? 0) - (span?.startMs ?? 0)).toBe(1_234);
  });

  it('obeys OTEL_TRACES_SAMPLER=always_off: the context still travels (unsampled), nothing is exported', async () => {
    const on = await tracingTo({ OTEL_TRACES_SAMPLER: 'always_off' });
    const span = on.start('publish inbound');
    expect(span.context?.traceparent).toMatch(/-00$/);
    span.end();
    await on.flush();
    expect((receiver as OtlpReceiver).spans).toEqual([]);
  });

  it('an unreachable collector is one warning, not an error of the caller', async () => {
    const { logger, lines } = capturingLogger();
    const port = await closedPort();
    const config = parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` }).tracing;
    tracing = await startTracing({ config, service: 'magpie-test', logger, exportDelayMs: 20 });
    for (let i = 0; i < 2; i++) {
      tracing.start(`span ${i}`).end();
      await tracing.flush();
    }
    expect(lines.filter((l) => /traces not sent/.test(l.msg))).toHaveLength(1);
  }, 30_000);
});

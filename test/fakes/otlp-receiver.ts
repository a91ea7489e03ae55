/**
 * An OTLP/HTTP trace receiver on 127.0.0.1 (a free port), as an
 * OpenTelemetry collector's HTTP port takes them: `POST /v1/traces` with the
 * exporter's JSON (`ExportTraceServiceRequest`, gzip allowed). Every span is
 * decoded into a flat record with its service, parent and attributes, and the
 * raw bodies are kept so a test can search everything that was sent.
 */
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's span kind number (1 internal, 2 server, 3 client, 4 producer, 5 consumer). */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, string | number | boolean>;
  links: Array<{ traceId: string; spanId: string }>;
  /** Status code (0 unset, 1 ok, 2 error). */
  status: number;
}

export interface OtlpReceiver {
  /** The base endpoint (OTEL_EXPORTER_OTLP_ENDPOINT). */
  endpoint: string;
  spans: ReceivedSpan[];
  /** Every request body as received (decompressed), to search for text that must not be there. */
  bodies: string[];
  /** Headers of every export request. */
  headers: IncomingMessage['headers'][];
  /** Resolves with the spans once `check` holds for them (on each export, not by polling). */
  until(check: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
};
type KeyValue = { key: string; value: AnyValue };

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const headers: IncomingMessage['headers'][] = [];
  const events = new EventEmitter();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      let raw = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
      if (!String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(415).end();
        return;
      }
      const text = raw.toString('utf8');
      bodies.push(text);
      headers.push(req.headers);
      spans.push(...decode(JSON.parse(text)));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      events.emit('spans');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    bodies,
    headers,
    until(check, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const test = () => {
          if (!check(spans)) return;
          clearTimeout(timer);
          events.off('spans', test);
          resolve(spans);
        };
        const timer = setTimeout(() => {
          events.off('spans', test);
          reject(
            new Error(`spans received so far: ${spans.map((s) => `${s.service}/${s.name}`).join(', ')}`),
          );
        }, timeoutMs);
        events.on('spans', test);
        test();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The spans of an ExportTraceServiceRequest in OTLP's JSON encoding (ids in hex). */
function decode(body: {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }>;
  }>;
}): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '');
    for (const scope of rs.scopeSpans ?? [])
      for (const s of scope.spans ?? []) {
        out.push({
          service,
          traceId: String(s.traceId),
          spanId: String(s.spanId),
          parentSpanId: String(s.parentSpanId ?? ''),
          name: String(s.name),
          kind: Number(s.kind),
          startMs: Number(BigInt(String(s.startTimeUnixNano)) / 1_000_000n),
          endMs: Number(BigInt(String(s.endTimeUnixNano)) / 1_000_000n),
          attributes: attributesOf(s.attributes as KeyValue[] | undefined),
          links: ((s.links as Array<{ traceId: string; spanId: string }> | undefined) ?? []).map((l) => ({
            traceId: l.traceId,
            spanId: l.spanId,
          })),
          status: Number((s.status as { code?: number } | undefined)?.code ?? 0),
        });
      }
  }
  return out;
}

function attributesOf(list: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    if (value.stringValue !== undefined) out[key] = value.stringValue;
    else if (value.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value.doubleValue !== undefined) out[key] = value.doubleValue;
    else if (value.boolValue !== undefined) out[key] = value.boolValue;
  }
  return out;
}

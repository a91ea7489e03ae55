/**
 * Traces end to end (issue 32): `magpie gateway` and `magpie worker` processes
 * with the OTEL_* variables pointing at an in-process OTLP/HTTP receiver; a
 * message posted to the web chat becomes one trace: the gateway's publish, the
 * worker's turn (a child across the bus), each model and tool call, the
 * outbound publish and the gateway's send. A marker in the message, the tool's
 * arguments and the model's answer must appear nowhere in what was exported,
 * and the collector's key (OTEL_EXPORTER_OTLP_HEADERS) reaches it but no log.
 * The gateway's dashboard shows the same turn as a timeline (`/turns`) in
 * headless Chromium, from magpie's own turn records, behind the same sign-in.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../fakes/browser.js';
import { daemonSuite } from '../fakes/daemon.js';
import { lastUserText } from '../fakes/openai-server.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../fakes/otlp-receiver.js';
import { freePort } from '../fakes/redis-server.js';
import { pageHeaders, webRequest } from '../fakes/web-client.js';
import { daemonEnv, magpie, type Proc, ROOT } from './daemon-helpers.js';

const TOKEN = `trace-e2e-${randomUUID()}`;
const MARKER = `zebra-${randomUUID()}`;
const COLLECTOR_KEY = `collector-key-${randomUUID()}`;

describe('traces across the gateway and worker processes', () => {
  const suite = daemonSuite({ killAfter: 'all' });
  let receiver: OtlpReceiver;
  let port: number;
  let gateway: Proc;
  let worker: Proc;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    port = await freePort();
    env = daemonEnv({
      REDIS_URL: suite.redisUrl,
      OPENAI_BASE_URL: suite.fake.baseURL,
      MAGPIE_WORKSPACE: suite.workspace,
      MAGPIE_DASHBOARD_PORT: String(port),
      MAGPIE_DASHBOARD_TOKEN: TOKEN,
      MAGPIE_STREAM: 'off',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${COLLECTOR_KEY}`,
    });
    gateway = magpie(['gateway'], env);
    worker = magpie(['worker'], { ...env, MAGPIE_DASHBOARD_PORT: undefined });
    suite.procs.push(gateway, worker);
    await Promise.all([
      gateway.waitFor(/magpie is running/, 20_000),
      worker.waitFor(/magpie is running/, 20_000),
    ]);
  }, 60_000);

  let browser: Browser | undefined;

  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
  });

  it('one trace per turn: receipt, bus hop, turn, model and tool calls, outbound hop and send, parents across processes', async () => {
    suite.fake.setResponder((req, index) =>
      index === 0
        ? {
            toolCalls: [
              { name: 'write_file', arguments: JSON.stringify({ path: 'note.txt', content: MARKER }) },
            ],
          }
        : { content: `done: ${lastUserText(req).includes(MARKER) ? MARKER : 'no marker'}` },
    );
    const posted = await webRequest(port, 'POST', '/chat/messages', {
      headers: pageHeaders(port, TOKEN),
      body: JSON.stringify({ chat: 'trace-1', text: `please note ${MARKER}` }),
    });
    expect(posted.status).toBeLessThan(300);
    // Each process exports on its own schedule: wait for the last span of each.
    const spans = await receiver.until(
      (all) =>
        all.some((s) => s.name === 'send web' && s.attributes['magpie.message.kind'] === 'reply') &&
        all.some((s) => s.service === 'magpie-worker' && s.name === 'process inbound'),
    );
    const one = (service: string, name: string): ReceivedSpan => {
      const found = spans.filter((s) => s.service === service && s.name === name);
      expect(
        found.map((s) => s.name),
        `${service} ${name}`,
      ).toHaveLength(1);
      return found[0] as ReceivedSpan;
    };
    const receipt = one('magpie-gateway', 'publish inbound');
    const turn = one('magpie-worker', 'process inbound');
    const tool = one('magpie-worker', 'execute_tool write_file');
    const outbound = one('magpie-worker', 'publish outbound-web');
    const send = one('magpie-gateway', 'send web');
    const models = spans.filter((s) => s.service === 'magpie-worker' && s.name.startsWith('chat '));
    expect(models).toHaveLength(2);

    // One trace, parented across the bus both ways.
    const trace = receipt.traceId;
    for (const s of [turn, tool, outbound, send, ...models]) expect(s.traceId).toBe(trace);
    expect(receipt.parentSpanId).toBe('');
    expect(receipt.kind).toBe(4); // producer
    expect(turn.parentSpanId).toBe(receipt.spanId);
    expect(turn.kind).toBe(5); // consumer
    for (const s of [tool, outbound, ...models]) expect(s.parentSpanId).toBe(turn.spanId);
    expect(send.parentSpanId).toBe(outbound.spanId);

    // What each step says: gen_ai conventions for the model, name and outcome for the tool.
    const first = models.sort((a, b) => a.startMs - b.startMs)[0] as ReceivedSpan;
    expect(first.attributes['gen_ai.operation.name']).toBe('chat');
    expect(first.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    expect(first.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(tool.attributes['gen_ai.tool.name']).toBe('write_file');
    expect(tool.attributes['magpie.tool.outcome']).toBe('ok');
    expect(turn.attributes['magpie.turn.outcome']).toBe('ok');
    expect(turn.attributes['magpie.turn.tool_calls']).toBe(1);
    // The steps lie inside the turn, in order.
    expect(first.startMs).toBeGreaterThanOrEqual(turn.startMs);
    expect(tool.startMs).toBeGreaterThanOrEqual(first.endMs);
    expect(send.startMs).toBeGreaterThanOrEqual(outbound.startMs);
  });

  it('a message sent with `magpie send` starts its trace in the sending process, and the turn continues it', async () => {
    suite.fake.setResponder(() => ({ content: 'sent back' }));
    // The daemon's own environment (its Redis prefix), as a user's shell with the same .env.
    const send = magpie(
      ['send', '-m', 'traced from the command line', '--chat', 'cli-trace', '--timeout', '20s'],
      { ...env, MAGPIE_DASHBOARD_PORT: undefined },
    );
    expect(await send.exited).toBe(0);
    expect(send.stdout()).toContain('sent back');
    const spans = await receiver.until((all) =>
      all.some(
        (s) =>
          s.service === 'magpie-worker' &&
          s.name === 'process inbound' &&
          all.some((p) => p.service === 'magpie-cli' && p.spanId === s.parentSpanId),
      ),
    );
    const receipt = spans.find(
      (s) =>
        s.service === 'magpie-cli' &&
        s.name === 'publish inbound' &&
        spans.some((t) => t.name === 'process inbound' && t.parentSpanId === s.spanId),
    ) as ReceivedSpan;
    expect(receipt.parentSpanId).toBe('');
    expect(receipt.kind).toBe(4); // producer
    const turn = spans.find((s) => s.name === 'process inbound' && s.parentSpanId === receipt.spanId)!;
    expect(turn.traceId).toBe(receipt.traceId);
  });

  it('exports no message text, tool argument or answer, and keeps the collector key out of the logs', async () => {
    expect(receiver.bodies.length).toBeGreaterThan(0);
    for (const body of receiver.bodies) expect(body).not.toContain(MARKER);
    for (const span of receiver.spans) {
      expect(span.name).not.toContain(MARKER);
      for (const value of Object.values(span.attributes)) expect(String(value)).not.toContain(MARKER);
    }
    expect(receiver.headers.every((h) => h.authorization === `Bearer ${COLLECTOR_KEY}`)).toBe(true);
    for (const proc of [gateway, worker]) {
      expect(proc.stdout() + proc.stderr()).not.toContain(COLLECTOR_KEY);
      expect(proc.stdout() + proc.stderr()).toContain('tracing on');
    }
  });

  it('a spawned helper is a child of the turn that spawned it, and the turn reading its result continues the trace', async () => {
    suite.fake.setResponder((req) => {
      const messages = req.body.messages as Array<{ role: string }>;
      if (messages.at(-1)?.role === 'tool') return { content: 'a helper is on it' };
      const text = lastUserText(req);
      if (text.includes('three sheep')) return { content: 'the helper counted' };
      if (text.includes('count sheep')) return { content: 'three sheep' };
      return { toolCalls: [{ name: 'spawn', arguments: JSON.stringify({ task: 'count sheep' }) }] };
    });
    const before = receiver.spans.length;
    const posted = await webRequest(port, 'POST', '/chat/messages', {
      headers: pageHeaders(port, TOKEN),
      body: JSON.stringify({ chat: 'trace-2', text: 'spawn a helper please' }),
    });
    expect(posted.status).toBeLessThan(300);
    const fresh = () => receiver.spans.slice(before);
    await receiver.until(() => {
      const turns = fresh().filter(
        (s) => s.name === 'process inbound' && s.attributes['magpie.channel'] === 'system',
      );
      return turns.length === 1 && fresh().filter((s) => s.name === 'send web').length >= 2;
    }, 30_000);
    const spans = fresh();
    const helper = spans.find((s) => s.name === 'helper spawn') as ReceivedSpan;
    expect(helper).toBeDefined();
    const first = spans.find((s) => s.name === 'process inbound' && s.attributes['magpie.channel'] === 'web');
    expect(helper.parentSpanId).toBe(first?.spanId);
    expect(helper.attributes['magpie.helper.kind']).toBe('spawn');
    const resultPublish = spans.find((s) => s.name === 'publish inbound' && s.parentSpanId === helper.spanId);
    expect(resultPublish?.attributes['magpie.channel']).toBe('system');
    const resultTurn = spans.find(
      (s) => s.name === 'process inbound' && s.attributes['magpie.channel'] === 'system',
    );
    expect(resultTurn?.parentSpanId).toBe(resultPublish?.spanId);
    for (const s of [helper, resultPublish, resultTurn]) expect(s?.traceId).toBe(first?.traceId);
  }, 45_000);

  it('the dashboard shows the turn as a timeline of its steps, behind the dashboard sign-in', async () => {
    const unsigned = await webRequest(port, 'GET', '/turns');
    expect(unsigned.status).toBe(401);
    browser = await launchChromium(['--disable-quic', '--disable-component-update', '--disable-sync']);
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    expect((await page.goto(`http://127.0.0.1:${port}/?token=${TOKEN}`))?.status()).toBe(200);
    await page.goto(`http://127.0.0.1:${port}/turns`);
    const turn = page.locator('section.turn', { hasText: 'web:trace-1' }).first();
    await turn.waitFor({ timeout: 10_000 });
    const labels = (await turn.locator('.what').allTextContents()).map((l) => l.replace(/ .*/, ''));
    expect(labels).toEqual(['received', 'queued', 'turn', 'model', 'tool', 'model', 'reply']);
    expect(await turn.locator('.what', { hasText: 'tool write_file' }).count()).toBe(1);
    // The bars follow time: each step starts at or after the one before, inside the lane.
    const boxes = await turn.locator('.bar').evaluateAll((bars) =>
      bars.map((b) => {
        const box = b as unknown as { offsetLeft: number; offsetWidth: number };
        return { left: box.offsetLeft, width: box.offsetWidth };
      }),
    );
    for (let i = 4; i < boxes.length; i++)
      expect(boxes[i]?.left ?? 0).toBeGreaterThanOrEqual((boxes[i - 1]?.left ?? 0) - 1);
    expect(await turn.textContent()).not.toContain(MARKER);
    mkdirSync(path.join(ROOT, 'test-artifacts'), { recursive: true });
    await page.screenshot({ path: path.join(ROOT, 'test-artifacts', 'turn-timeline.png'), fullPage: true });
    expect(violations).toEqual([]);
    await context.close();
  }, 45_000);
});

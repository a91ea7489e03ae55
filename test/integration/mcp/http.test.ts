/**
 * MCP over HTTP with a server of our own on the SDK's Streamable HTTP
 * transport (and an SSE-only one for the fallback), bound to 127.0.0.1:
 * `${VAR}` headers sent, results (error, structured, capped, image
 * placeholder, secrets redacted), a protocol error, `tools/list_changed`,
 * `/stop` as the protocol's cancellation, the call time limit, a server
 * that is down at start and joins later, and two servers whose names clash.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/index.js';
import type { HttpServerSpec } from '../../../src/mcp/config.js';
import { McpServerConnection } from '../../../src/mcp/connection.js';
import { McpManager } from '../../../src/mcp/manager.js';
import { CANCELLED_RESULT, ToolRegistry } from '../../../src/tools/registry.js';
import { capturingLogger } from '../../fakes/logger.js';
import { type FakeMcpServer, startFakeMcpServer } from '../../fakes/mcp-http-server.js';
import { closedPort as freePort } from '../../fakes/net.js';
import { waitFor } from '../../fakes/wait-for.js';
import { toolContext } from '../../unit/tools/helpers.js';

const fakes: FakeMcpServer[] = [];
const closers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c.close();
  for (const f of fakes.splice(0)) await f.close();
});

async function fakeServer(options: Parameters<typeof startFakeMcpServer>[0] = {}): Promise<FakeMcpServer> {
  const server = await startFakeMcpServer(options);
  fakes.push(server);
  return server;
}

function spec(name: string, url: string, extra: Partial<HttpServerSpec> = {}): HttpServerSpec {
  return {
    name,
    transport: 'http',
    display: url,
    url,
    headers: {},
    sseFallback: true,
    secrets: [],
    ...extra,
  };
}

async function managed(
  servers: HttpServerSpec[],
  options: { callTimeoutMs?: number; vision?: boolean } = {},
) {
  const { logger, lines } = capturingLogger();
  const manager = new McpManager({
    servers,
    logger,
    env: {},
    retryInitialMs: 100,
    retryMaxMs: 500,
    ...options,
  });
  closers.push(manager);
  await manager.start(10_000);
  const registry = new ToolRegistry();
  manager.attach(registry);
  return { manager, registry, lines };
}

const call = (registry: ToolRegistry, name: string, args: object = {}, signal?: AbortSignal) =>
  registry.execute(name, JSON.stringify(args), toolContext('/tmp', signal ? { signal } : {}));

describe('MCP over Streamable HTTP (our own server)', () => {
  it('connects, sends the configured headers and calls a tool', async () => {
    const server = await fakeServer();
    const { registry, manager } = await managed([
      spec('notes', server.url, { headers: { Authorization: 'Bearer notes-token-1' } }),
    ]);
    expect(manager.statuses()[0]).toMatchObject({ state: 'connected', transport: 'http' });
    expect(registry.names()).toEqual(expect.arrayContaining(['notes__add', 'notes__slow', 'notes__fail']));
    expect(server.headers.every((h) => h.authorization === 'Bearer notes-token-1')).toBe(true);
    expect((await call(registry, 'notes__add', { a: 2, b: 3 })).forLLM).toMatch(/\n5\n/);
    expect(server.calls).toEqual([{ tool: 'add', args: { a: 2, b: 3 } }]);
  });

  it('maps an isError result, structured content, a capped big answer and an image for a text model', async () => {
    const server = await fakeServer();
    const { registry } = await managed([spec('n', server.url)]);
    const failed = await call(registry, 'n__fail');
    expect(failed).toMatchObject({ isError: true });
    expect(failed.forLLM).toContain('it broke: disk full');
    expect((await call(registry, 'n__structured')).forLLM).toContain('"temperature": 21');
    const big = await call(registry, 'n__big');
    expect(big.forLLM).toContain('[output truncated to 20000 of 100000 characters]');
    const image = await call(registry, 'n__image');
    expect(image.images).toBeUndefined();
    expect(image.forLLM).toContain('not shown: this model does not take images');
  });

  it("redacts the server's own secrets (expanded header values) from its output", async () => {
    const server = await fakeServer({ secret: 'notes-token-1' });
    const { registry } = await managed([
      spec('n', server.url, {
        headers: { Authorization: 'Bearer notes-token-1' },
        secrets: ['notes-token-1'],
      }),
    ]);
    const result = await call(registry, 'n__secret');
    expect(result.forLLM).toContain('the secret is [redacted]');
  });

  it('a protocol error (a tool the server does not know) is an error naming it', async () => {
    const server = await fakeServer();
    const connection = new McpServerConnection({
      spec: spec('n', server.url),
      logger: pino({ level: 'silent' }),
      env: {},
      onToolsChanged: () => undefined,
    });
    closers.push(connection);
    await connection.start();
    const err = await connection
      .callTool('vanished', {}, new AbortController().signal)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).message).toMatch(/-32602.*Tool vanished not found/);
  });

  it('follows tools/list_changed: a new tool joins the registry', async () => {
    const server = await fakeServer();
    const { registry } = await managed([spec('n', server.url)]);
    expect(registry.names()).not.toContain('n__late');
    await server.addTool('late');
    await waitFor(() => registry.names().includes('n__late'), 10_000, 'the new tool');
    expect((await call(registry, 'n__late')).forLLM).toContain('new tool late');
  });

  it('/stop cancels a running call and the server receives the cancellation', async () => {
    const server = await fakeServer();
    const { registry } = await managed([spec('n', server.url)]);
    const stop = new AbortController();
    const running = call(registry, 'n__slow', {}, stop.signal);
    await server.waitForCalls('slow');
    stop.abort();
    expect(await running).toEqual(CANCELLED_RESULT);
    await waitFor(() => server.cancelled.includes('slow'), 10_000, 'the cancellation at the server');
  });

  it('a call past MAGPIE_MCP_TIMEOUT is an error saying so, and the server is told to stop', async () => {
    const server = await fakeServer();
    const { registry } = await managed([spec('n', server.url)], { callTimeoutMs: 300 });
    const result = await call(registry, 'n__slow');
    expect(result.isError).toBe(true);
    expect(result.forLLM).toMatch(/"n" did not answer within 0.3 s/);
    await waitFor(() => server.cancelled.includes('slow'), 10_000, 'the cancellation at the server');
  });

  it('falls back to the SSE transport for a server that only speaks it', async () => {
    const server = await fakeServer({ mode: 'sse' });
    const { registry, manager } = await managed([
      spec('old', server.url, { headers: { 'X-Api-Key': 'k-1' } }),
    ]);
    expect(manager.statuses()[0]).toMatchObject({ state: 'connected', transport: 'sse' });
    expect((await call(registry, 'old__add', { a: 1, b: 1 })).forLLM).toMatch(/\n2\n/);
    expect(server.headers.filter((h) => h['x-api-key'] === 'k-1').length).toBeGreaterThan(1);
  });

  it('a server down at start is a warning, retried in the background; its tools join when it is up', async () => {
    const port = await freePort();
    const { registry, manager, lines } = await managed([spec('late', `http://127.0.0.1:${port}/mcp`)]);
    expect(manager.statuses()[0]?.state).toBe('failed');
    expect(manager.statuses()[0]?.error).toMatch(/cannot reach .*ECONNREFUSED/);
    expect(lines.some((l) => l.level === 40 && /"late" failed to start/.test(l.msg))).toBe(true);
    expect(registry.names()).toEqual([]);
    await fakeServer({ port });
    await waitFor(() => registry.names().includes('late__add'), 15_000, 'the late server connected');
    expect(manager.statuses()[0]?.state).toBe('connected');
  });

  it('refused credentials say so, naming the headers to fix, and keep the token out', async () => {
    const server = await fakeServer({ token: 'right-token' });
    const { manager } = await managed([
      spec('n', server.url, { headers: { Authorization: 'Bearer wrong-token' }, secrets: ['wrong-token'] }),
    ]);
    expect(manager.statuses()[0]?.error).toMatch(
      /refused the credentials \(HTTP 401\): check "headers" in mcp\.json/,
    );
    expect(manager.statuses()[0]?.error).not.toContain('wrong-token');
  });

  it('a server answering HTTP 404 is reported with the status', async () => {
    const server = await fakeServer();
    const wrongPath = `${server.url.replace('/mcp', '')}/nope`;
    const { manager } = await managed([spec('n', wrongPath, { sseFallback: false })]);
    expect(manager.statuses()[0]?.error).toMatch(/HTTP 404/);
  });

  it('a name clash between two servers is a warning naming both; the first keeps the name', async () => {
    const a = await fakeServer();
    const b = await fakeServer();
    const { registry, lines } = await managed([spec('my.srv', a.url), spec('my_srv', b.url)]);
    expect(registry.names().filter((n) => n === 'my_srv__add')).toHaveLength(1);
    await call(registry, 'my_srv__add', { a: 1, b: 2 });
    expect(a.calls).toHaveLength(1);
    expect(b.calls).toHaveLength(0);
    const warning = lines.find((l) => l.level === 40 && l.msg.includes('clashes'));
    expect(warning?.msg).toMatch(/server "my\.srv" tool "add" and server "my_srv" tool "add"/);
  });
});

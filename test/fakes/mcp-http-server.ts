/**
 * A small MCP server of our own for tests, on the SDK's server transports and
 * bound to 127.0.0.1: Streamable HTTP (stateful sessions, so it can send
 * `tools/list_changed`) or, in `sse` mode, only the older SSE transport (for
 * the client's fallback). It records request headers, calls and
 * cancellations. Tools: add, slow (waits until cancelled), fail (isError),
 * structured, big, image, secret (echoes a value given at start).
 * A call to a tool it does not list is a protocol error (-32602).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';

/** A 1×1 transparent PNG. */
export const TINY_PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

export interface FakeMcpOptions {
  /** `streamable` (default) or `sse` (the old transport only; Streamable HTTP POSTs get 405). */
  mode?: 'streamable' | 'sse';
  /** Listen on this port (to come up where a client already retries). @defaultValue a free one */
  port?: number;
  /** What the `secret` tool answers (to check redaction). @defaultValue 'no secret' */
  secret?: string;
  /** Requests without `Authorization: Bearer <token>` get 401. @defaultValue any request is served */
  token?: string;
}

export interface FakeMcpServer {
  /** The endpoint to configure: .../mcp (streamable) or .../sse. */
  url: string;
  port: number;
  /** Headers of every HTTP request received. */
  headers: IncomingHttpHeaders[];
  calls: { tool: string; args: Record<string, unknown> }[];
  /** Tools whose call was cancelled by the client (notifications/cancelled). */
  cancelled: string[];
  /** Adds a tool (it answers "new tool <name>") and tells every session its list changed. */
  addTool(name: string): Promise<void>;
  /** Resolves when `tool` has been called `count` times. */
  waitForCalls(tool: string, count?: number): Promise<void>;
  close(): Promise<void>;
}

const BASE_TOOLS: Tool[] = [
  {
    name: 'add',
    description: 'Adds two numbers.\nSecond line of the description.',
    inputSchema: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
  },
  { name: 'slow', description: 'Waits until cancelled.', inputSchema: { type: 'object', properties: {} } },
  { name: 'fail', description: 'Always reports a failure.', inputSchema: { type: 'object', properties: {} } },
  {
    name: 'structured',
    description: 'Structured content only.',
    inputSchema: { type: 'object', properties: {} },
    outputSchema: { type: 'object', properties: { temperature: { type: 'number' } } },
  },
  { name: 'big', description: 'A very long answer.', inputSchema: { type: 'object', properties: {} } },
  { name: 'image', description: 'A tiny PNG.', inputSchema: { type: 'object', properties: {} } },
  { name: 'secret', description: 'Says the secret.', inputSchema: { type: 'object', properties: {} } },
];

/** Starts the server. */
export async function startFakeMcpServer(options: FakeMcpOptions = {}): Promise<FakeMcpServer> {
  const mode = options.mode ?? 'streamable';
  const tools = [...BASE_TOOLS];
  const servers = new Set<Server>();
  const streamable = new Map<string, StreamableHTTPServerTransport>();
  const sse = new Map<string, SSEServerTransport>();
  const headers: IncomingHttpHeaders[] = [];
  const calls: { tool: string; args: Record<string, unknown> }[] = [];
  const cancelled: string[] = [];
  const waiters = new Set<() => void>();

  const makeServer = (): Server => {
    const server = new Server(
      { name: 'fake-mcp', version: '1.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
      const name = request.params.name;
      const args = (request.params.arguments ?? {}) as Record<string, unknown>;
      if (!tools.some((t) => t.name === name))
        throw new McpError(ErrorCode.InvalidParams, `Tool ${name} not found`);
      calls.push({ tool: name, args });
      for (const wake of waiters) wake();
      switch (name) {
        case 'add':
          return { content: [{ type: 'text', text: String(Number(args.a) + Number(args.b)) }] };
        case 'slow':
          await new Promise<void>((resolve) => {
            if (extra.signal.aborted) return resolve();
            extra.signal.addEventListener('abort', () => resolve(), { once: true });
          });
          cancelled.push(name);
          return { content: [{ type: 'text', text: 'too late' }] };
        case 'fail':
          return { content: [{ type: 'text', text: 'it broke: disk full' }], isError: true };
        case 'structured':
          return { content: [], structuredContent: { temperature: 21 } };
        case 'big':
          return { content: [{ type: 'text', text: 'x'.repeat(100_000) }] };
        case 'image':
          return {
            content: [
              { type: 'text', text: 'here it is' },
              { type: 'image', data: TINY_PNG, mimeType: 'image/png' },
            ],
          };
        case 'secret':
          return { content: [{ type: 'text', text: `the secret is ${options.secret ?? 'no secret'}` }] };
        default:
          return { content: [{ type: 'text', text: `new tool ${name}` }] };
      }
    });
    servers.add(server);
    return server;
  };

  const readBody = async (req: IncomingMessage): Promise<unknown> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text === '' ? undefined : JSON.parse(text);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    headers.push(req.headers);
    if (options.token !== undefined && req.headers.authorization !== `Bearer ${options.token}`) {
      return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (mode === 'sse') {
      if (req.method === 'GET' && url.pathname === '/sse') {
        const transport = new SSEServerTransport('/messages', res);
        sse.set(transport.sessionId, transport);
        res.on('close', () => sse.delete(transport.sessionId));
        await makeServer().connect(transport);
        return;
      }
      if (req.method === 'POST' && url.pathname === '/messages') {
        const transport = sse.get(url.searchParams.get('sessionId') ?? '');
        if (!transport) return void res.writeHead(404).end('no session');
        await transport.handlePostMessage(req, res, await readBody(req));
        return;
      }
      return void res.writeHead(405).end('only SSE here');
    }
    if (url.pathname !== '/mcp') return void res.writeHead(404).end('not here');
    const sessionId = req.headers['mcp-session-id'];
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    let transport = typeof sessionId === 'string' ? streamable.get(sessionId) : undefined;
    if (!transport) {
      if (req.method !== 'POST') return void res.writeHead(400).end('no session');
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          streamable.set(id, created);
        },
      });
      transport = created;
      await makeServer().connect(created);
    }
    await transport.handleRequest(req, res, body);
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((resolve) => http.listen(options.port ?? 0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${mode === 'sse' ? '/sse' : '/mcp'}`,
    port,
    headers,
    calls,
    cancelled,
    async addTool(name) {
      tools.push({
        name,
        description: `Added later: ${name}.`,
        inputSchema: { type: 'object', properties: {} },
      });
      await Promise.all([...servers].map((s) => s.sendToolListChanged().catch(() => undefined)));
    },
    waitForCalls(tool, count = 1) {
      return new Promise((resolve) => {
        const check = () => {
          if (calls.filter((c) => c.tool === tool).length >= count) {
            waiters.delete(check);
            resolve();
          }
        };
        waiters.add(check);
        check();
      });
    },
    async close() {
      await Promise.all([...servers].map((s) => s.close().catch(() => undefined)));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

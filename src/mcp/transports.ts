/**
 * Opens an MCP client session over the SDK's transports: stdio (a child
 * process with a small environment: PATH, HOME, LANG, TZ plus what the
 * server's `env` names), Streamable HTTP, and the older SSE transport as the
 * fallback for servers that only speak it. Failures become one plain reason.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { describeError } from '../errors/index.js';
import type { HttpServerSpec, McpServerSpec, StdioServerSpec } from './config.js';
import { ChildProcessTransport } from './stdio-transport.js';

/** Variables a stdio server gets from magpie's environment; everything else must be named in its `env`. */
export const STDIO_BASE_ENV = ['PATH', 'HOME', 'LANG', 'TZ'] as const;

/** Which transport a session runs on. */
export type TransportKind = 'stdio' | 'http' | 'sse';

/** An open session. */
export interface OpenSession {
  client: Client;
  transport: Transport;
  kind: TransportKind;
  /** The child's process id (stdio). */
  pid?: number;
}

export interface OpenOptions {
  clientInfo: { name: string; version: string };
  /** magpie's environment, for the stdio base variables. */
  env: NodeJS.ProcessEnv;
  /** The initialize handshake's time limit. */
  timeoutMs: number;
  signal: AbortSignal;
  /** Lines the child writes to stderr. */
  onStderr?: (line: string) => void;
  /** Called with each transport before it connects (so a close during the handshake can close it). */
  onTransport?: (transport: Transport) => void;
  /** A client built for the session (list-changed handlers set); default a bare one. */
  makeClient?: () => Client;
}

/** The environment of a stdio server: the base variables from magpie's, then the server's own `env`. */
export function stdioEnvironment(spec: StdioServerSpec, env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of STDIO_BASE_ENV) {
    const value = env[name];
    if (value !== undefined) out[name] = value;
  }
  return Object.assign(out, spec.env);
}

/** Connects to `spec`; rejects with an Error whose message is the reason (see {@link explainFailure}). */
export async function openSession(spec: McpServerSpec, options: OpenOptions): Promise<OpenSession> {
  if (spec.transport === 'stdio') {
    const transport = new ChildProcessTransport({
      command: spec.command,
      args: spec.args,
      env: stdioEnvironment(spec, options.env),
      ...(spec.cwd ? { cwd: spec.cwd } : {}),
      ...(options.onStderr ? { onStderr: options.onStderr } : {}),
    });
    const client = await connect(transport, options);
    return { client, transport, kind: 'stdio', ...(transport.pid ? { pid: transport.pid } : {}) };
  }
  if (spec.transport === 'sse') return { ...(await connectSse(spec, options)), kind: 'sse' };
  try {
    const transport = new StreamableHTTPClientTransport(new URL(spec.url), {
      requestInit: { headers: spec.headers },
    });
    return { client: await connect(transport, options), transport, kind: 'http' };
  } catch (err) {
    if (!spec.sseFallback || !streamableRefused(err) || options.signal.aborted) throw err;
    return { ...(await connectSse(spec, options)), kind: 'sse' };
  }
}

async function connectSse(spec: HttpServerSpec, options: OpenOptions): Promise<Omit<OpenSession, 'kind'>> {
  const transport = new SSEClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers } });
  return { client: await connect(transport, options), transport };
}

async function connect(transport: Transport, options: OpenOptions): Promise<Client> {
  options.onTransport?.(transport);
  const client = options.makeClient?.() ?? new Client(options.clientInfo, { capabilities: {} });
  try {
    await client.connect(transport, { timeout: options.timeoutMs, signal: options.signal });
  } catch (err) {
    await transport.close().catch(() => undefined); // already failed; the connect error is the one to report
    throw err;
  }
  return client;
}

/** A Streamable HTTP attempt the server answered with "not this protocol" (an SSE-only server). */
function streamableRefused(err: unknown): boolean {
  if (!(err instanceof StreamableHTTPError) || err.code === undefined) return false;
  return err.code >= 400 && err.code < 500 && err.code !== 401 && err.code !== 403;
}

/**
 * Why a connection attempt failed, in one line for people (a missing command,
 * a refused token, a server that exited and what it last said).
 */
export function explainFailure(err: unknown, spec: McpServerSpec, lastStderr?: string): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (spec.transport === 'stdio' && code === 'ENOENT') {
    return `command not found: ${spec.command} (is it installed and on PATH?)`;
  }
  if (spec.transport === 'stdio' && code === 'EACCES') return `cannot run ${spec.command}: permission denied`;
  const said = lastStderr ? ` (it said: ${lastStderr.slice(0, 300)})` : '';
  if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) {
    return spec.transport === 'stdio'
      ? `the server exited before it answered${said}`
      : 'the server closed the connection';
  }
  if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) return `no answer in time${said}`;
  if (err instanceof StreamableHTTPError && (err.code === 401 || err.code === 403)) {
    return `the server refused the credentials (HTTP ${err.code}): check "headers" in mcp.json`;
  }
  if (err instanceof StreamableHTTPError && err.code !== undefined && err.code > 0) {
    return `the server answered HTTP ${err.code}`;
  }
  if (err instanceof Error && err.constructor.name === 'UnauthorizedError') {
    return 'the server wants OAuth authorisation, which magpie does not do: put a token in "headers"';
  }
  const cause = (err as { cause?: { code?: string } } | undefined)?.cause?.code;
  if (cause) return `cannot reach ${spec.display}: ${cause}`;
  return `${describeError(err)}${said}`;
}

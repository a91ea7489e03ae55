/**
 * One MCP server's life: connect (with a time limit), list its tools (all
 * pages), follow `tools/list_changed`, call tools (time limit, cancellation
 * through the protocol's notification), and after a failed start or a lost
 * connection (a stdio child that died) try again in the background with
 * backoff. `close()` ends the session and the child process.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  type CallToolResult,
  ErrorCode,
  McpError,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { AppError } from '../errors/index.js';
import { type Logger, redactSecrets } from '../log/index.js';
import type { McpServerSpec } from './config.js';
import { explainFailure, openSession, type TransportKind } from './transports.js';

/** Where a server is in its life. */
export type ServerState = 'starting' | 'connected' | 'failed' | 'restarting' | 'closed';

/** A tool as the server lists it. */
export interface McpToolInfo {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** The server marks the tool as only reading (`annotations.readOnlyHint`). */
  readOnly?: boolean;
}

/** What `magpie mcp`, doctor and logs show about a server. */
export interface ServerStatus {
  name: string;
  transport: TransportKind;
  /** The command line or URL as written in mcp.json. */
  display: string;
  state: ServerState;
  /** Why it is not connected (failed, restarting). */
  error?: string;
  tools: McpToolInfo[];
  /** The child's process id (stdio, connected). */
  pid?: number;
  /** Connection attempts made so far (retries and restarts included). */
  attempts: number;
}

export interface ServerConnectionOptions {
  spec: McpServerSpec;
  logger: Logger;
  /** magpie's environment (for a stdio server's base variables). */
  env: NodeJS.ProcessEnv;
  /** Each tool call's time limit. @defaultValue 60_000 */
  callTimeoutMs?: number;
  /** One connection attempt's time limit (start-up and tool list). @defaultValue 60_000 */
  connectTimeoutMs?: number;
  /** First retry delay; it doubles up to `retryMaxMs`. @defaultValue 1_000 */
  retryInitialMs?: number;
  /** @defaultValue 300_000 */
  retryMaxMs?: number;
  /** Called when the server's tools (or whether it has any) changed. */
  onToolsChanged: () => void;
  /** @defaultValue { name: 'magpie', version: '0.1.0' } */
  clientInfo?: { name: string; version: string };
}

/** A connection that stayed up this long resets the backoff (a crash loop keeps growing it). */
const STABLE_MS = 30_000;

/** One server; `start()` makes the first attempt, later ones run by themselves. */
export class McpServerConnection {
  readonly name: string;
  readonly #o: Required<Omit<ServerConnectionOptions, 'spec' | 'logger' | 'env' | 'onToolsChanged'>> &
    ServerConnectionOptions;
  readonly #log: Logger;
  #state: ServerState = 'starting';
  #kind: TransportKind;
  #client: Client | undefined;
  #transport: Transport | undefined;
  #pid: number | undefined;
  #tools: McpToolInfo[] = [];
  #error: string | undefined;
  #failures = 0;
  #connectedAt = 0;
  #retryTimer: NodeJS.Timeout | undefined;
  #attempt: AbortController | undefined;
  #closing: Promise<void> | undefined;
  #lastStderr: string | undefined;
  #first: Promise<void> | undefined;
  #warnedReason: string | undefined;
  #attempts = 0;

  constructor(options: ServerConnectionOptions) {
    this.#o = {
      callTimeoutMs: 60_000,
      connectTimeoutMs: 60_000,
      retryInitialMs: 1_000,
      retryMaxMs: 300_000,
      clientInfo: { name: 'magpie', version: '0.1.0' },
      ...options,
    };
    for (const key of ['callTimeoutMs', 'connectTimeoutMs', 'retryInitialMs', 'retryMaxMs'] as const) {
      const value = this.#o[key];
      if (!Number.isFinite(value) || value <= 0)
        throw new RangeError(`${key} must be positive, not ${value}`);
    }
    this.name = options.spec.name;
    this.#kind = options.spec.transport;
    this.#log = options.logger.child({ mcpServer: this.name });
  }

  /** The first connection attempt; resolves (never rejects) when it connected or failed. Same promise on every call. */
  start(): Promise<void> {
    this.#first ??= this.#connect();
    return this.#first;
  }

  status(): ServerStatus {
    const { spec } = this.#o;
    return {
      name: this.name,
      transport: this.#kind,
      display: spec.display,
      state: this.#state,
      ...(this.#error ? { error: this.#error } : {}),
      tools: [...this.#tools],
      ...(this.#pid && this.#state === 'connected' ? { pid: this.#pid } : {}),
      attempts: this.#attempts,
    };
  }

  /** The tools to offer: those of the last successful listing (kept while a lost server restarts). */
  tools(): readonly McpToolInfo[] {
    return this.#state === 'connected' || this.#state === 'restarting' ? this.#tools : [];
  }

  /**
   * Calls a tool. Aborting `signal` sends the protocol's cancellation.
   *
   * @throws AppError TOOL_FAILED (server down, protocol error) or TIMEOUT, with a message for the model.
   */
  async callTool(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> {
    const client = this.#client;
    if (this.#state !== 'connected' || !client) {
      const why = this.#error ? ` (${this.#error})` : '';
      throw new AppError(
        'TOOL_FAILED',
        this.#state === 'restarting'
          ? `the MCP server "${this.name}" is restarting${why}; try again in a moment`
          : `the MCP server "${this.name}" is not connected${why}`,
      );
    }
    const timeoutMs = this.#o.callTimeoutMs;
    try {
      return (await client.callTool({ name: tool, arguments: args }, undefined, {
        signal,
        timeout: timeoutMs,
      })) as CallToolResult;
    } catch (err) {
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout && !signal.aborted) {
        throw new AppError(
          'TIMEOUT',
          `the MCP server "${this.name}" did not answer within ${timeoutMs / 1000} s`,
          {
            cause: err,
          },
        );
      }
      if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) {
        throw new AppError(
          'TOOL_FAILED',
          `the MCP server "${this.name}" closed the connection during the call`,
          {
            cause: err,
          },
        );
      }
      throw new AppError('TOOL_FAILED', this.#redact(err instanceof Error ? err.message : String(err)), {
        cause: err,
      });
    }
  }

  /** Ends the session and any child process; no retries after. Same promise on every call. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#state = 'closed';
      clearTimeout(this.#retryTimer);
      this.#attempt?.abort();
      const client = this.#client;
      const transport = this.#transport;
      this.#client = undefined;
      this.#transport = undefined;
      if (client) await client.close();
      else if (transport) await transport.close();
    })();
    return this.#closing;
  }

  async #connect(): Promise<void> {
    const { spec } = this.#o;
    if (this.#closing) return;
    if (spec.problem) {
      this.#fail(spec.problem, false);
      return;
    }
    const attempt = new AbortController();
    this.#attempt = attempt;
    this.#attempts += 1;
    this.#lastStderr = undefined;
    try {
      const session = await openSession(spec, {
        clientInfo: this.#o.clientInfo,
        env: this.#o.env,
        timeoutMs: this.#o.connectTimeoutMs,
        signal: attempt.signal,
        onStderr: (line) => {
          this.#lastStderr = line;
          this.#log.debug({ stderr: this.#redact(line) }, 'mcp server stderr');
        },
        onTransport: (transport) => {
          this.#transport = transport;
        },
      });
      this.#client = session.client;
      this.#transport = session.transport;
      this.#kind = session.kind;
      this.#pid = session.pid;
      if (this.#closing) {
        await session.client.close();
        return;
      }
      const tools = await this.#listTools(session.client, attempt.signal);
      session.client.onclose = () => this.#lost(session.client);
      session.client.onerror = (err) =>
        this.#log.debug({ err: this.#redact(String(err)) }, 'mcp transport error');
      this.#followListChanges(session.client);
      this.#tools = tools;
      this.#state = 'connected';
      this.#error = undefined;
      this.#connectedAt = Date.now();
      this.#warnedReason = undefined;
      this.#log.info({ transport: session.kind, tools: tools.length }, `mcp server "${this.name}" connected`);
      this.#o.onToolsChanged();
    } catch (err) {
      if (this.#closing) return;
      const client = this.#client;
      this.#client = undefined;
      await (client ?? this.#transport)?.close().catch(() => undefined); // the attempt already failed
      this.#fail(this.#redact(explainFailure(err, spec, this.#lastStderr)), true);
    } finally {
      if (this.#attempt === attempt) this.#attempt = undefined;
    }
  }

  async #listTools(client: Client, signal: AbortSignal): Promise<McpToolInfo[]> {
    const tools: McpToolInfo[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 100; page++) {
      const result = await client.listTools(cursor ? { cursor } : {}, {
        timeout: this.#o.connectTimeoutMs,
        signal,
      });
      for (const tool of result.tools) {
        tools.push({
          name: tool.name,
          description: tool.description ?? tool.title ?? '',
          inputSchema: tool.inputSchema as Record<string, unknown>,
          ...(tool.annotations?.readOnlyHint === true ? { readOnly: true } : {}),
        });
      }
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    return tools;
  }

  /** `notifications/tools/list_changed`: list again, then tell the manager. */
  #followListChanges(client: Client): void {
    if (!client.getServerCapabilities()?.tools?.listChanged) return;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      if (client !== this.#client || this.#state !== 'connected') return;
      try {
        this.#tools = await this.#listTools(client, AbortSignal.timeout(this.#o.connectTimeoutMs));
        this.#log.info({ tools: this.#tools.length }, `mcp server "${this.name}" changed its tools`);
        this.#o.onToolsChanged();
      } catch (err) {
        this.#log.warn(
          { err: this.#redact(String(err)) },
          `mcp server "${this.name}": listing changed tools failed`,
        );
      }
    });
  }

  /** The session closed by itself (a stdio child that exited): restart it. */
  #lost(client: Client): void {
    if (client !== this.#client || this.#closing) return;
    this.#client = undefined;
    this.#transport = undefined;
    const why = this.#lastStderr
      ? `it exited (last said: ${this.#lastStderr.slice(0, 200)})`
      : 'the connection closed';
    this.#error = this.#redact(why);
    this.#state = 'restarting';
    if (Date.now() - this.#connectedAt >= STABLE_MS) this.#failures = 0;
    this.#log.warn(`mcp server "${this.name}" lost: ${this.#error}; restarting`);
    this.#scheduleRetry();
  }

  #fail(reason: string, retry: boolean): void {
    const wasUp = this.#state === 'restarting';
    this.#error = reason;
    this.#state = wasUp && retry ? 'restarting' : 'failed';
    this.#o.onToolsChanged();
    if (!retry) {
      this.#log.warn(`mcp server "${this.name}" not started: ${reason}`);
      return;
    }
    const delay = this.#scheduleRetry();
    // One warning per reason: retries that fail the same way are logged at debug only.
    const level = reason === this.#warnedReason ? 'debug' : 'warn';
    this.#warnedReason = reason;
    this.#log[level](
      `mcp server "${this.name}" failed to start: ${reason}; retrying in ${Math.round(delay / 1000)} s`,
    );
  }

  /** Schedules the next attempt with exponential backoff and jitter; returns the delay. */
  #scheduleRetry(): number {
    const base = Math.min(this.#o.retryMaxMs, this.#o.retryInitialMs * 2 ** this.#failures);
    const delay = Math.round(base * (0.8 + Math.random() * 0.4));
    this.#failures += 1;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => void this.#connect(), delay);
    this.#retryTimer.unref();
    return delay;
  }

  #redact(text: string): string {
    return redactSecrets(text, this.#o.spec.secrets);
  }
}

/**
 * The MCP servers of one process (a worker, `magpie agent`, `magpie mcp`):
 * starts them in parallel, turns their tools into magpie Tools named
 * `<server>__<tool>` and keeps every attached ToolRegistry in step as servers
 * come, go and change their lists. A name clash is a warning naming both; the
 * first keeps the name. `close()` ends every server.
 */
import type { Logger } from '../log/index.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { Tool } from '../tools/types.js';
import type { McpServerSpec } from './config.js';
import { McpServerConnection, type McpToolInfo, type ServerStatus } from './connection.js';
import { mcpToolName } from './names.js';
import { createMcpTool } from './tool-adapter.js';

export interface McpManagerOptions {
  servers: McpServerSpec[];
  logger: Logger;
  /** magpie's environment (a stdio server's PATH, HOME, LANG, TZ come from it). */
  env: NodeJS.ProcessEnv;
  /** Each tool call's time limit (MAGPIE_MCP_TIMEOUT). @defaultValue 60_000 */
  callTimeoutMs?: number;
  /** One connection attempt's time limit. @defaultValue 60_000 */
  connectTimeoutMs?: number;
  /** Attach images tools return (the model takes them). @defaultValue false */
  vision?: boolean;
  /** Characters of one tool result at most. @defaultValue 20_000 */
  maxOutputChars?: number;
  /** First retry delay after a failure; doubles up to `retryMaxMs`. @defaultValue 1_000 */
  retryInitialMs?: number;
  /** @defaultValue 300_000 */
  retryMaxMs?: number;
}

/** Extra time the registry allows a call beyond the MCP time limit. */
const REGISTRY_GRACE_MS = 5_000;

/** All servers of one mcp.json. */
export class McpManager {
  readonly #connections: McpServerConnection[];
  readonly #specs = new Map<string, McpServerSpec>();
  readonly #log: Logger;
  readonly #vision: boolean;
  readonly #maxChars: number;
  readonly #callTimeoutMs: number;
  /** Adapters by `server\0tool`, reused while the tool's listing is unchanged. */
  readonly #adapters = new Map<string, { info: string; tool: Tool }>();
  /** What this manager put into each attached registry. */
  readonly #registered = new Map<ToolRegistry, Map<string, Tool>>();
  readonly #warned = new Set<string>();
  #closing: Promise<void> | undefined;

  constructor(options: McpManagerOptions) {
    this.#log = options.logger;
    this.#vision = options.vision ?? false;
    this.#maxChars = options.maxOutputChars ?? 20_000;
    this.#callTimeoutMs = options.callTimeoutMs ?? 60_000;
    this.#connections = options.servers.map((spec) => {
      this.#specs.set(spec.name, spec);
      return new McpServerConnection({
        spec,
        logger: options.logger,
        env: options.env,
        callTimeoutMs: this.#callTimeoutMs,
        ...(options.connectTimeoutMs ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
        ...(options.retryInitialMs ? { retryInitialMs: options.retryInitialMs } : {}),
        ...(options.retryMaxMs ? { retryMaxMs: options.retryMaxMs } : {}),
        onToolsChanged: () => this.#sync(),
      });
    });
  }

  /**
   * Starts every server in parallel and waits until each has connected or
   * failed its first attempt, or `waitMs` passed (slower ones keep starting
   * and their tools join when they are up).
   */
  async start(waitMs = 20_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, waitMs);
      timer.unref();
    });
    await Promise.race([Promise.all(this.#connections.map((c) => c.start())), late]);
    clearTimeout(timer);
    for (const c of this.#connections) {
      if (c.status().state === 'starting') {
        this.#log.warn(`mcp server "${c.name}" is still starting; its tools join when it is up`);
      }
    }
  }

  /** Each server's state and tools, in mcp.json order. */
  statuses(): ServerStatus[] {
    return this.#connections.map((c) => c.status());
  }

  /** The tools of every available server now, clashes left out. */
  tools(): Tool[] {
    const byName = new Map<string, { server: string; tool: string; adapter: Tool }>();
    for (const connection of this.#connections) {
      for (const info of connection.tools()) {
        const name = mcpToolName(connection.name, info.name);
        const taken = byName.get(name);
        if (taken) {
          this.#clash(name, `server "${taken.server}" tool "${taken.tool}"`, connection.name, info.name);
          continue;
        }
        byName.set(name, {
          server: connection.name,
          tool: info.name,
          adapter: this.#adapter(connection, info, name),
        });
      }
    }
    return [...byName.values()].map((entry) => entry.adapter);
  }

  /** Puts the tools into `registry` now and keeps them current there until close. */
  attach(registry: ToolRegistry): void {
    if (!this.#registered.has(registry)) this.#registered.set(registry, new Map());
    this.#syncRegistry(registry, this.tools());
  }

  /** Ends every server (children included). Same promise on every call. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      const results = await Promise.allSettled(this.#connections.map((c) => c.close()));
      for (const [i, r] of results.entries()) {
        if (r.status === 'rejected') {
          this.#log.warn(
            { err: String(r.reason) },
            `mcp server "${this.#connections[i]?.name}" did not close cleanly`,
          );
        }
      }
    })();
    return this.#closing;
  }

  #sync(): void {
    if (this.#closing || this.#registered.size === 0) return;
    const tools = this.tools();
    for (const registry of this.#registered.keys()) this.#syncRegistry(registry, tools);
  }

  #syncRegistry(registry: ToolRegistry, tools: Tool[]): void {
    const mine = this.#registered.get(registry) ?? new Map<string, Tool>();
    const wanted = new Map(tools.map((t) => [t.name, t]));
    for (const [name, tool] of mine) {
      if (wanted.get(name) === tool) continue;
      if (registry.get(name) === tool) registry.unregister(name);
      mine.delete(name);
    }
    for (const [name, tool] of wanted) {
      if (mine.has(name)) continue;
      if (registry.get(name)) {
        this.#clash(name, "one of magpie's own tools", ...this.#origin(tool));
        continue;
      }
      registry.register(tool);
      mine.set(name, tool);
    }
  }

  #adapter(connection: McpServerConnection, info: McpToolInfo, name: string): Tool {
    const key = `${connection.name}\0${info.name}`;
    const listing = JSON.stringify(info);
    const known = this.#adapters.get(key);
    if (known && known.info === listing && known.tool.name === name) return known.tool;
    const tool = createMcpTool({
      server: connection.name,
      info,
      name,
      call: (args, signal) => connection.callTool(info.name, args, signal),
      vision: this.#vision,
      maxChars: this.#maxChars,
      secrets: this.#specs.get(connection.name)?.secrets ?? [],
      timeLimitMs: this.#callTimeoutMs + REGISTRY_GRACE_MS,
    });
    this.#adapters.set(key, { info: listing, tool });
    return tool;
  }

  #origin(tool: Tool): [string, string] {
    for (const [key, entry] of this.#adapters) {
      if (entry.tool === tool) {
        const [server = '', name = ''] = key.split('\0');
        return [server, name];
      }
    }
    return ['?', tool.name];
  }

  /** One warning per clash, naming both sides. */
  #clash(name: string, first: string, server: string, tool: string): void {
    const key = `${name}\0${server}\0${tool}`;
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    this.#log.warn(
      `mcp tool name "${name}" clashes: ${first} and server "${server}" tool "${tool}"; the second is left out`,
    );
  }
}

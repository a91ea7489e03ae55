/**
 * One look at every server of mcp.json, for `magpie mcp` and `magpie doctor`:
 * connect them all in parallel (within a time limit), note each one's state
 * and tools, and close them again. No retries: what failed is reported.
 */
import type { Config } from '../config/index.js';
import { type Logger, silentLogger } from '../log/index.js';
import type { ServerStatus } from './connection.js';
import { mcpToolName } from './names.js';
import { hasMcpConfig } from './start.js';

/** What a probe found. */
export interface McpProbe {
  /** The config file looked at. */
  file: string;
  /** Whether it exists (no file: no MCP, `servers` empty). */
  exists: boolean;
  servers: ProbedServer[];
}

/** A server as the probe saw it; tools carry the name the model sees. */
export interface ProbedServer extends Omit<ServerStatus, 'tools'> {
  tools: { name: string; modelName: string; description: string }[];
}

export interface ProbeOptions {
  config: Config;
  /** magpie's environment (`${VAR}`, a stdio server's base variables). */
  env: NodeJS.ProcessEnv;
  /** How long to wait for the servers. @defaultValue 20_000 */
  waitMs?: number;
  /** @defaultValue silent (the caller reports) */
  logger?: Logger;
}

/**
 * Connects every server once and reports.
 *
 * @throws ConfigError (exit 2) for a malformed mcp.json or one inside the workspace.
 */
export async function probeMcp(options: ProbeOptions): Promise<McpProbe> {
  const { config } = options;
  const file = config.mcp.configFile;
  if (!hasMcpConfig(file)) return { file, exists: false, servers: [] };
  const { loadMcpConfig } = await import('./config.js');
  const loaded = await loadMcpConfig({ file, workspace: config.workspace, env: options.env });
  if (!loaded) return { file, exists: false, servers: [] };
  const { McpManager } = await import('./manager.js');
  const waitMs = options.waitMs ?? 20_000;
  const manager = new McpManager({
    servers: loaded.servers,
    logger: options.logger ?? silentLogger(),
    env: options.env,
    callTimeoutMs: config.mcp.timeoutMs,
    connectTimeoutMs: waitMs,
  });
  try {
    await manager.start(waitMs);
    const servers = manager.statuses().map((status): ProbedServer => {
      const waited = status.state === 'starting';
      return {
        ...status,
        ...(waited ? { state: 'failed' as const, error: `no answer within ${waitMs / 1000} s` } : {}),
        tools: status.tools.map((t) => ({
          name: t.name,
          modelName: mcpToolName(status.name, t.name),
          description: t.description,
        })),
      };
    });
    return { file, exists: true, servers };
  } finally {
    await manager.close();
  }
}

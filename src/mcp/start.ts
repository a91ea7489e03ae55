/**
 * The way in to MCP for the composition roots (`magpie worker`/`start`,
 * `magpie agent`): without an mcp.json nothing else of MCP is loaded — not the
 * config parser, not the SDK (each is a dynamic import behind the file check),
 * so start-up without MCP is unchanged.
 */
import { lstatSync } from 'node:fs';
import type { Config } from '../config/index.js';
import type { Logger } from '../log/index.js';
import type { McpManager } from './manager.js';

export interface StartMcpOptions {
  config: Config;
  logger: Logger;
  /** magpie's environment: `${VAR}` values and a stdio server's PATH, HOME, LANG, TZ. */
  env: NodeJS.ProcessEnv;
  /** Attach images tools return (the model takes them). @defaultValue false */
  vision?: boolean;
  /** How long start-up waits for the servers' first attempts. @defaultValue 20_000 */
  waitMs?: number;
}

/** True when the MCP config file exists (a dangling link counts: loading it then says what is wrong). */
export function hasMcpConfig(file: string): boolean {
  try {
    lstatSync(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    return true; // unreadable for another reason: loading reports it
  }
}

/**
 * Loads mcp.json and starts its servers.
 *
 * @returns undefined when there is no mcp.json or it lists no enabled server.
 * @throws ConfigError (exit 2) for a malformed file or one inside the workspace.
 */
export async function startMcp(options: StartMcpOptions): Promise<McpManager | undefined> {
  const { config } = options;
  if (!hasMcpConfig(config.mcp.configFile)) return undefined;
  const { loadMcpConfig } = await import('./config.js');
  const loaded = await loadMcpConfig({
    file: config.mcp.configFile,
    workspace: config.workspace,
    env: options.env,
  });
  if (!loaded || loaded.servers.length === 0) return undefined;
  const { McpManager } = await import('./manager.js');
  const manager = new McpManager({
    servers: loaded.servers,
    logger: options.logger,
    env: options.env,
    callTimeoutMs: config.mcp.timeoutMs,
    vision: options.vision ?? false,
  });
  await manager.start(options.waitMs);
  return manager;
}

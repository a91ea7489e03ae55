/**
 * `magpie doctor`'s checks of what the agent reaches beyond the model: each
 * MCP server of mcp.json (connected, how many tools; or why not, with the
 * fix) and the web search backend (one real query).
 */
import type { Config } from '../config/index.js';
import { AppError, describeError } from '../errors/index.js';
import { type Check, type CheckResult, failed, pass, skipped } from './doctor.js';

/** How long the MCP check waits for the servers (they start in parallel). */
export const MCP_CHECK_MS = 20_000;

/** Each server of mcp.json: one line each. */
export function mcpCheck(config: Config, env: NodeJS.ProcessEnv): Check {
  return {
    name: 'mcp',
    timeoutMs: MCP_CHECK_MS + 5_000,
    async run(): Promise<CheckResult | CheckResult[]> {
      const { probeMcp } = await import('../mcp/probe.js');
      let probe: Awaited<ReturnType<typeof probeMcp>>;
      try {
        probe = await probeMcp({ config, env, waitMs: MCP_CHECK_MS });
      } catch (err) {
        return failed(describeError(err), `fix ${config.mcp.configFile} (or MAGPIE_MCP_CONFIG in .env)`);
      }
      if (!probe.exists) return skipped(`no ${config.mcp.configFile} (no MCP servers)`);
      if (probe.servers.length === 0) return skipped(`no enabled server in ${probe.file}`);
      return probe.servers.map((s) =>
        s.state === 'connected'
          ? pass(`${s.name}: connected over ${s.transport}, ${s.tools.length} tools`)
          : failed(
              `${s.name}: ${s.error ?? 'not connected'}`,
              s.error?.startsWith('command not found')
                ? `install it, or fix "command" of ${s.name} in ${probe.file}`
                : `check the entry of ${s.name} in ${probe.file}; "magpie mcp" shows more`,
            ),
      );
    },
  };
}

/** The web search backend: one query for "magpie", which proves the key (or the instance's JSON API). */
export function searchCheck(config: Config): Check {
  return {
    name: 'web search',
    timeoutMs: 15_000,
    async run(signal): Promise<CheckResult> {
      const { searchBackendFor } = await import('../tools/search-backends/index.js');
      const backend = searchBackendFor(config.search, { timeoutMs: 10_000 });
      if (!backend) {
        return skipped('no backend (set BRAVE_API_KEY, TAVILY_API_KEY or SEARXNG_URL for web_search)');
      }
      try {
        const hits = await backend.search('magpie', 1, signal);
        return pass(
          `${backend.label} answered (${hits.length} result${hits.length === 1 ? '' : 's'} for a test query)`,
        );
      } catch (err) {
        const message = err instanceof AppError ? err.message : describeError(err);
        return failed(message, searchFix(config));
      }
    },
  };
}

function searchFix(config: Config): string {
  switch (config.search.backend) {
    case 'brave':
      return 'check BRAVE_API_KEY (and BRAVE_API_ROOT, when set) in .env';
    case 'tavily':
      return 'check TAVILY_API_KEY (and TAVILY_API_ROOT, when set) in .env';
    default:
      return 'check SEARXNG_URL in .env, and that the instance allows the json format (search.formats)';
  }
}

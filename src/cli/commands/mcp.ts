/**
 * `magpie mcp [--json]`: connects to each MCP server of mcp.json, prints
 * whether it connected (or why not) and its tools as the model sees them,
 * then disconnects.
 */
import { ExitCode } from '../../errors/index.js';
import { type McpProbe, probeMcp } from '../../mcp/probe.js';
import { parseTimeoutFlag } from '../args.js';
import { defineCommand } from '../command.js';
import { commandConfig, commandEnv, WORKSPACE_FLAG } from '../startup.js';

const HELP = `usage: magpie mcp [--json] [--timeout D] [--workspace DIR]

Connects to each server in the MCP config file (MAGPIE_MCP_CONFIG, default
./mcp.json beside .env), prints whether it connected — or why not — and its
tools under the names the model sees (<server>__<tool>), then disconnects.

options:
  --json           machine-readable output
  --timeout D      how long to wait for the servers (default 20s)
  --workspace DIR  overrides MAGPIE_WORKSPACE (mcp.json may not lie inside it)
  -h, --help       this help

exit codes: 0 every server connected (or there is no mcp.json), 1 a server failed,
2 the file is malformed or inside the workspace`;

/** How long `magpie mcp` waits for the servers when `--timeout` is not given. */
const DEFAULT_WAIT_MS = 20_000;

/** The command; tests pass their own output. */
export const runMcp = defineCommand({
  name: 'mcp',
  help: HELP,
  flags: { json: { type: 'boolean' }, timeout: { type: 'string' }, ...WORKSPACE_FLAG },
  async run({ values }, io) {
    const waitMs = parseTimeoutFlag('mcp', values.timeout, DEFAULT_WAIT_MS);
    const config = commandConfig(values);
    const probe = await probeMcp({ config, env: commandEnv(values), waitMs });
    io.out.write(values.json ? `${JSON.stringify(probe, null, 2)}\n` : formatProbe(probe));
    return probe.servers.every((s) => s.state === 'connected') ? ExitCode.ok : ExitCode.failure;
  },
});

/** The command as `magpie mcp` runs it (output on stdout). */
export const run = runMcp;

/** The probe for people: one line per server, its tools indented below. */
export function formatProbe(probe: McpProbe): string {
  if (!probe.exists) {
    return `No MCP servers: ${probe.file} does not exist (see "MCP servers" in the README).\n`;
  }
  if (probe.servers.length === 0) return `No enabled MCP servers in ${probe.file}.\n`;
  const lines = [`MCP servers in ${probe.file}:`];
  for (const s of probe.servers) {
    if (s.state === 'connected') {
      const count = `${s.tools.length} tool${s.tools.length === 1 ? '' : 's'}`;
      lines.push(`✓ ${s.name}  connected (${s.transport}: ${s.display})  ${count}`);
      const width = Math.max(0, ...s.tools.map((t) => t.modelName.length));
      for (const t of s.tools) {
        const description = t.description.split('\n')[0]?.slice(0, 100) ?? '';
        lines.push(`    ${t.modelName.padEnd(width)}  ${description}`);
      }
    } else {
      lines.push(`✗ ${s.name}  failed (${s.transport}: ${s.display}): ${s.error ?? 'unknown reason'}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

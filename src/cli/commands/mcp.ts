/**
 * `magpie mcp [--json]`: connects to each MCP server of mcp.json, prints
 * whether it connected (or why not) and its tools as the model sees them,
 * then disconnects.
 */
import { parseDuration } from '../../config/index.js';
import { ConfigError, ExitCode } from '../../errors/index.js';
import { type McpProbe, probeMcp } from '../../mcp/probe.js';
import { parseCommandArgs } from '../args.js';
import { commandConfig, commandEnv } from '../startup.js';

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

export interface McpCommandIO {
  out: { write(text: string): unknown };
}

export async function run(argv: string[]): Promise<number> {
  return runMcp(argv, { out: process.stdout });
}

/** The command with its output stream injected. */
export async function runMcp(argv: string[], io: McpCommandIO): Promise<number> {
  const { values } = parseCommandArgs('mcp', argv, {
    json: { type: 'boolean' },
    timeout: { type: 'string' },
    workspace: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.out.write(`${HELP}\n`);
    return ExitCode.ok;
  }
  const waitMs = values.timeout === undefined ? 20_000 : parseDuration(values.timeout);
  if (waitMs === undefined || waitMs <= 0) {
    throw new ConfigError(`magpie mcp: --timeout "${values.timeout}" is not a duration (e.g. 30s)`);
  }
  const config = commandConfig(values);
  const probe = await probeMcp({ config, env: commandEnv(values), waitMs });
  io.out.write(values.json ? `${JSON.stringify(probe, null, 2)}\n` : formatProbe(probe));
  return probe.servers.every((s) => s.state === 'connected') ? ExitCode.ok : ExitCode.failure;
}

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

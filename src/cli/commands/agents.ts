/** `magpie agents [--json]`: the assistants of agents.json, each with its workspace, model and tools, and the routes. */
import { agentConfig } from '../../agents/agent-config.js';
import { loadAgents } from '../../agents/spec.js';
import { ExitCode } from '../../errors/index.js';
import { defineCommand } from '../command.js';
import { commandConfig, commandEnv, WORKSPACE_FLAG } from '../startup.js';

const HELP = `usage: magpie agents [--json]

The assistants this magpie serves (agents.json, MAGPIE_AGENTS_CONFIG; without the
file: one, main) with each one's workspace, model, bus prefix, tools and heartbeat,
then the routes in the order they are tried (the first match wins) and the default.

options:
  --json           one JSON object (for scripts)
  --workspace DIR  overrides MAGPIE_WORKSPACE
  -h, --help       this help

exit codes: 0 shown, 2 bad config or agents.json`;

export const run = defineCommand({
  name: 'agents',
  help: HELP,
  flags: { json: { type: 'boolean' }, ...WORKSPACE_FLAG },
  async run({ values }) {
    const config = commandConfig(values);
    const env = commandEnv(values);
    const file = loadAgents({
      file: config.agentsFile,
      workspace: config.workspace,
      stateDir: config.stateDir,
    });
    const agents = file.agents.map((spec) => {
      const c = agentConfig(config, spec, env);
      return {
        id: spec.id,
        name: spec.name ?? null,
        workspace: c.workspace,
        model: c.llm.models.map((m) => m.id),
        prefix: c.redis.prefix,
        tools: c.toolFilter ?? null,
        sandbox: c.sandbox.mode,
        approval: c.approval.mode,
        heartbeat: c.heartbeat.intervalMs === 0 ? 'off' : `${Math.round(c.heartbeat.intervalMs / 1000)}s`,
        canAsk: [...c.agent.canAsk],
      };
    });
    const report = { file: file.file ?? null, agents, routes: file.routes, default: file.defaultAgent };
    if (values.json) {
      process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return ExitCode.ok;
    }
    const lines = [file.file ? `agents (${file.file}):` : `agents (no ${config.agentsFile}: one agent):`];
    for (const a of agents) {
      lines.push(`  ${a.id}${a.name ? ` (${a.name})` : ''}`);
      lines.push(`    workspace  ${a.workspace}`);
      lines.push(`    model      ${a.model.join(' → ')}`);
      lines.push(`    bus prefix ${a.prefix}`);
      if (a.tools) {
        if (a.tools.allow) lines.push(`    tools      only ${a.tools.allow.join(', ')}`);
        if (a.tools.deny) lines.push(`    tools      not ${a.tools.deny.join(', ')}`);
      }
      lines.push(`    sandbox    ${a.sandbox}; approval ${a.approval}; heartbeat ${a.heartbeat}`);
      if (a.canAsk.length > 0) lines.push(`    may ask    ${a.canAsk.join(', ')}`);
    }
    lines.push('routes (the first match wins):');
    if (file.routes.length === 0) lines.push('  none');
    for (const r of file.routes) {
      const when = [
        r.channel ? `channel ${r.channel}` : '',
        r.account ? `account ${r.account}` : '',
        r.chat ? `chat ${r.chat}` : '',
        r.sender ? `sender ${r.sender}` : '',
      ].filter(Boolean);
      lines.push(`  ${when.join(', ')} → ${r.agent}`);
    }
    lines.push(`otherwise → ${file.defaultAgent}`);
    process.stdout.write(`${lines.join('\n')}\n`);
    return ExitCode.ok;
  },
});

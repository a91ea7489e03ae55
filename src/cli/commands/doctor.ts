/** `magpie doctor [--live]`: is everything set up? One line per check, with the fix. */

import { agentConfig } from '../../agents/agent-config.js';
import { type AgentsFile, loadAgents, MAIN_AGENT } from '../../agents/spec.js';
import { channelDoctorChecks } from '../../channels/registry.js';
import type { Config } from '../../config/index.js';
import { secretValues } from '../../config/secrets.js';
import { ConfigError, ExitCode } from '../../errors/index.js';
import { type Check, formatChecks, runChecks } from '../../ops/doctor.js';
import { buildChecks } from '../../ops/doctor-checks.js';
import { modelChecks } from '../../ops/doctor-models.js';
import { bootstrapFilesCheck, workspaceCheck } from '../../ops/doctor-workspace.js';
import { defineCommand } from '../command.js';
import { commandConfig, commandEnv, WORKSPACE_FLAG } from '../startup.js';

const HELP = `usage: magpie doctor [--live]

Checks the configuration, the workspace and its bootstrap files, Redis (version,
maxmemory-policy noeviction, persistence), the LLM endpoint and model, each
channel's own check (its bot token), each MCP server of mcp.json (at most 25 s),
the web search backend (one test query), and that a worker runs. Other checks
take at most 3 s.

options:
  --live           also ask the model for a one-token completion, and speak one short
                   phrase with the speech engine (MAGPIE_TTS)
  --workspace DIR  overrides MAGPIE_WORKSPACE
  -h, --help       this help

exit codes: 0 all checks passed (warnings, marked !, included), 1 a check failed`;

export const run = defineCommand({
  name: 'doctor',
  help: HELP,
  flags: { live: { type: 'boolean' }, ...WORKSPACE_FLAG },
  async run({ values }) {
    let config: Config;
    try {
      config = commandConfig(values);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      process.stdout.write(
        formatChecks([
          { name: 'config', status: 'fail', detail: err.message, fix: 'edit .env (see .env.example)' },
        ]),
      );
      return ExitCode.failure;
    }
    const env = commandEnv(values);
    const doctor = buildChecks({
      config,
      live: values.live ?? false,
      env,
      channelChecks: [...channelDoctorChecks(config), ...agentsChecks(config, env, values.live ?? false)],
      speechEngine: async (voice) => (await import('../../app/build-voice.js')).buildSpeechEngine(voice),
    });
    try {
      const lines = await runChecks(doctor.checks, {
        timeoutMs: 3_000,
        secrets: secretValues(config),
      });
      lines.unshift({
        name: 'config',
        status: 'ok',
        detail: `valid (model ${config.llm.model}, prefix ${config.redis.prefix})`,
      });
      process.stdout.write(formatChecks(lines));
      return lines.some((l) => l.status === 'fail') ? ExitCode.failure : ExitCode.ok;
    } finally {
      await doctor.close();
    }
  },
});

/**
 * agents.json: one line for the file (its agents and routes, or why it is refused), then each
 * agent other than main with its own workspace and model checks, named `<agent>: …`.
 */
function agentsChecks(config: Config, env: NodeJS.ProcessEnv, live: boolean): Check[] {
  let file: AgentsFile;
  try {
    file = loadAgents({ file: config.agentsFile, workspace: config.workspace, stateDir: config.stateDir });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const message = err.message;
    return [
      {
        name: 'agents',
        run: async () => ({
          status: 'fail',
          detail: message,
          fix: 'fix agents.json (README: Several assistants)',
        }),
      },
    ];
  }
  if (!file.file) return [];
  const summary = `${file.agents.map((a) => a.id).join(', ')}; ${file.routes.length} routes, otherwise ${file.defaultAgent}`;
  const checks: Check[] = [{ name: 'agents', run: async () => ({ status: 'ok', detail: summary }) }];
  for (const spec of file.agents) {
    if (spec.id === MAIN_AGENT) continue;
    const agent = agentConfig(config, spec, env);
    const named = (check: Check): Check => ({ ...check, name: `${spec.id}: ${check.name}` });
    checks.push(
      named(workspaceCheck(agent)),
      named(bootstrapFilesCheck(agent)),
      ...modelChecks(agent, live).map(named),
    );
  }
  return checks;
}

/** `magpie doctor [--live]`: is everything set up? One line per check, with the fix. */

import { channelDoctorChecks } from '../../channels/registry.js';
import type { Config } from '../../config/index.js';
import { secretValues } from '../../config/secrets.js';
import { ConfigError, ExitCode } from '../../errors/index.js';
import { formatChecks, runChecks } from '../../ops/doctor.js';
import { buildChecks } from '../../ops/doctor-checks.js';
import { defineCommand } from '../command.js';
import { commandConfig, commandEnv, WORKSPACE_FLAG } from '../startup.js';

const HELP = `usage: magpie doctor [--live]

Checks the configuration, the workspace and its bootstrap files, Redis (version,
maxmemory-policy noeviction, persistence), the LLM endpoint and model, each
channel's own check (its bot token), each MCP server of mcp.json (at most 25 s),
the web search backend (one test query), and that a worker runs. Other checks
take at most 3 s.

options:
  --live           also ask the model for a one-token completion
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
    const doctor = buildChecks({
      config,
      live: values.live ?? false,
      env: commandEnv(values),
      channelChecks: channelDoctorChecks(config),
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

/** `magpie status [--json]`: what is running and queued right now, read from Redis. */

import { agentConfigOf, loadAgentConfigs } from '../../agents/load.js';
import { MAIN_AGENT } from '../../agents/spec.js';
import { Budget } from '../../budget/budget.js';
import { budgetView } from '../../budget/report.js';
import { RedisBackupStore } from '../../bus/backup-store.js';
import { Bus } from '../../bus/bus.js';
import type { Config } from '../../config/index.js';
import { ExitCode } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import { collectStatus, type StatusReport } from '../../ops/status.js';
import { formatStatus } from '../../ops/status-format.js';
import { defineCommand } from '../command.js';
import { commandEnv, WORKSPACE_FLAG, withBus } from '../startup.js';

const HELP = `usage: magpie status [--json]

Shows Redis, live workers, queue depths, running turns and helpers, the heartbeat's
next run, scheduled tasks, the number of sessions, token use (today, since the start
and per session, with cached tokens; a cost with MAGPIE_PRICE_*), the budget (spend
against each MAGPIE_BUDGET_* limit set, calls in flight included, and the
calls-per-minute guard) and the last errors.

With agents.json, every agent's report in turn (each has its own queues,
workers, sessions and budget); --agent ID shows one.

options:
  --json           one JSON object (for scripts; with agents.json: { "agents": { id: report } })
  --agent ID       one agent of agents.json only
  --workspace DIR  overrides MAGPIE_WORKSPACE
  -h, --help       this help

exit codes: 0 shown, 2 bad config, 3 Redis unreachable`;

export const run = defineCommand({
  name: 'status',
  help: HELP,
  flags: { json: { type: 'boolean' }, agent: { type: 'string' }, ...WORKSPACE_FLAG },
  async run({ values }) {
    return withBus(values, 'silent', async ({ config, bus, logger }) => {
      const loaded = loadAgentConfigs(config, commandEnv(values));
      const { file } = loaded;
      const ids = values.agent === undefined ? [...loaded.configs.keys()] : [values.agent];
      const reports: Record<string, StatusReport> = {};
      for (const id of ids) {
        const agent = agentConfigOf(loaded, id, `magpie status: --agent ${id}`);
        if (id === MAIN_AGENT) {
          reports[id] = await statusOf(config, bus, logger);
          continue;
        }
        // Each agent's queues, workers, sessions and budget live under its own prefix and workspace.
        const agentBus = await Bus.connect({ config: agent, logger });
        try {
          reports[id] = await statusOf(agent, agentBus, logger);
        } finally {
          await agentBus.close();
        }
      }
      const only = ids.length === 1 && !file.file ? reports[ids[0] as string] : undefined;
      if (values.json) {
        process.stdout.write(`${JSON.stringify(only ?? { agents: reports }, null, 2)}\n`);
      } else if (only) {
        process.stdout.write(formatStatus(only));
      } else {
        for (const [id, report] of Object.entries(reports))
          process.stdout.write(`== agent ${id}\n${formatStatus(report)}\n`);
      }
      return ExitCode.ok;
    });
  },
});

/** One agent's report, read from its bus. */
function statusOf(config: Config, bus: Bus, logger: Logger): Promise<StatusReport> {
  return collectStatus({
    reader: bus.opsReader,
    url: bus.url,
    prefix: bus.prefix,
    workspace: config.workspace,
    timezone: config.timezone,
    ...(config.prices ? { prices: config.prices } : {}),
    lastBackup: () => new RedisBackupStore(bus.redis, bus.prefix).last(),
    budget: budgetView(
      new Budget({ config: config.budget, store: bus.budgetStore(), timezone: config.timezone, logger }),
    ),
  });
}

/** `magpie status [--json]`: what is running and queued right now, read from Redis. */
import { Budget } from '../../budget/budget.js';
import { budgetView } from '../../budget/report.js';
import { ExitCode } from '../../errors/index.js';
import { collectStatus } from '../../ops/status.js';
import { formatStatus } from '../../ops/status-format.js';
import { defineCommand } from '../command.js';
import { WORKSPACE_FLAG, withBus } from '../startup.js';

const HELP = `usage: magpie status [--json]

Shows Redis, live workers, queue depths, running turns and helpers, the heartbeat's
next run, scheduled tasks, the number of sessions, token use (today, since the start
and per session, with cached tokens; a cost with MAGPIE_PRICE_*), the budget (spend
against each MAGPIE_BUDGET_* limit set, calls in flight included, and the
calls-per-minute guard) and the last errors.

options:
  --json           one JSON object (for scripts)
  --workspace DIR  overrides MAGPIE_WORKSPACE
  -h, --help       this help

exit codes: 0 shown, 2 bad config, 3 Redis unreachable`;

export const run = defineCommand({
  name: 'status',
  help: HELP,
  flags: { json: { type: 'boolean' }, ...WORKSPACE_FLAG },
  async run({ values }) {
    return withBus(values, 'silent', async ({ config, bus, logger }) => {
      const report = await collectStatus({
        reader: bus.opsReader,
        url: bus.url,
        prefix: bus.prefix,
        workspace: config.workspace,
        timezone: config.timezone,
        ...(config.prices ? { prices: config.prices } : {}),
        budget: budgetView(
          new Budget({ config: config.budget, store: bus.budgetStore(), timezone: config.timezone, logger }),
        ),
      });
      process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : formatStatus(report));
      return ExitCode.ok;
    });
  },
});

/** `magpie usage [--json] [--days N]`: tokens and cost per day, per chat and per model, and the limits. */
import { Budget } from '../../budget/budget.js';
import { describeLimits, describeSpend, readUsageSummary, type UsageSummary } from '../../budget/report.js';
import { SPEND_DAYS_KEPT } from '../../bus/budget-store.js';
import { ConfigError, ExitCode } from '../../errors/index.js';
import { defineCommand } from '../command.js';
import { WORKSPACE_FLAG, withBus } from '../startup.js';

const DEFAULT_DAYS = 7;

const HELP = `usage: magpie usage [--json] [--days N]

Tokens (cached among them), model calls and cost of every model call the workers
settled: per day, per chat and per model, today and this month (days and months in
MAGPIE_TIMEZONE), with the limits (MAGPIE_BUDGET_*, MAGPIE_MAX_CALLS_PER_MINUTE).
Costs are at MAGPIE_PRICES / MAGPIE_PRICE_*; a model without a price counts tokens only.

options:
  --json           one JSON object (for scripts)
  --days N         days shown, 1-${SPEND_DAYS_KEPT} (default ${DEFAULT_DAYS})
  --workspace DIR  overrides MAGPIE_WORKSPACE
  -h, --help       this help

exit codes: 0 shown, 2 bad config or flag, 3 Redis unreachable`;

export const run = defineCommand({
  name: 'usage',
  help: HELP,
  flags: { json: { type: 'boolean' }, days: { type: 'string' }, ...WORKSPACE_FLAG },
  async run({ values }) {
    const days = values.days === undefined ? DEFAULT_DAYS : Number(values.days);
    if (!Number.isInteger(days) || days < 1 || days > SPEND_DAYS_KEPT) {
      throw new ConfigError(`magpie usage: --days must be a whole number from 1 to ${SPEND_DAYS_KEPT}`);
    }
    return withBus(values, 'silent', async ({ config, bus, logger }) => {
      const budget = new Budget({
        config: config.budget,
        store: bus.budgetStore(),
        timezone: config.timezone,
        logger,
      });
      const summary = await readUsageSummary(budget, { days });
      process.stdout.write(values.json ? `${JSON.stringify(summary, null, 2)}\n` : formatUsage(summary));
      return ExitCode.ok;
    });
  },
});

/** The summary for people: today, this month, then each day with its chats and models. */
export function formatUsage(s: UsageSummary): string {
  const lines = [
    `Usage (${s.timezone})`,
    `  today (${s.date}):       ${describeSpend(s.today)}`,
    `  this month (${s.month}):  ${describeSpend(s.thisMonth)}`,
    `  ${describeLimits(s.limits)}`,
    '',
  ];
  for (const day of [...s.days].reverse()) {
    lines.push(`${day.date}: ${describeSpend(day.total)}`);
    for (const [chat, f] of Object.entries(day.bySession)) lines.push(`  chat ${chat}: ${describeSpend(f)}`);
    for (const [model, f] of Object.entries(day.byModel)) lines.push(`  model ${model}: ${describeSpend(f)}`);
    const skipped = Object.entries(day.skipped).map(([k, n]) => `${n} ${k}`);
    if (skipped.length > 0) lines.push(`  skipped at a limit: ${skipped.join(', ')}`);
    const refused = Object.entries(day.refused).map(([k, n]) => `${n} at ${k}`);
    if (refused.length > 0) lines.push(`  model calls refused: ${refused.join(', ')}`);
  }
  return `${lines.join('\n')}\n`;
}

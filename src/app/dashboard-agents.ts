/**
 * What the dashboard shows of each agent of agents.json, read through that
 * agent's bus: its queues, turns and budget under its prefix, its sessions in
 * its workspace. Shared by the dashboard inside `start`/`gateway` (the
 * gateway's bus for each agent) and `magpie dashboard` (a bus of its own per
 * agent).
 */
import { type AgentsFile, MAIN_AGENT } from '../agents/spec.js';
import { Budget } from '../budget/budget.js';
import { budgetView } from '../budget/report.js';
import { RedisBackupStore } from '../bus/backup-store.js';
import type { Bus } from '../bus/bus.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../log/index.js';
import type { DashboardAgent } from '../ops/dashboard-server.js';

/** Main's view and the others', in agents.json's order; `busOf` and `configOf` give each agent's. */
export function dashboardAgents(
  file: AgentsFile,
  busOf: (id: string) => Bus,
  configOf: (id: string) => Config,
  logger: Logger,
): { main: DashboardAgent; others: DashboardAgent[] } {
  const shown = file.agents.map((spec): DashboardAgent => {
    const bus = busOf(spec.id);
    const config = configOf(spec.id);
    return {
      id: spec.id,
      ...(spec.name ? { name: spec.name } : {}),
      reader: bus.opsReader,
      prefix: bus.prefix,
      workspace: config.workspace,
      // The limits and the spend the workers count in Redis: gauges, overview lines, usage charts.
      budget: budgetView(
        new Budget({ config: config.budget, store: bus.budgetStore(), timezone: config.timezone, logger }),
      ),
      // Scheduled backups are main's (app/roles.ts startBackups).
      ...(spec.id === MAIN_AGENT
        ? { lastBackup: () => new RedisBackupStore(bus.redis, bus.prefix).last() }
        : {}),
    };
  });
  const [main, ...others] = shown as [DashboardAgent, ...DashboardAgent[]];
  return { main, others };
}

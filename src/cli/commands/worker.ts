/** `magpie worker`: runs agent turns from the bus and scheduled jobs (heartbeat, cron). Run as many as you like. */
import { type RunRole, runRoleCommand } from '../role-command.js';

const HELP = `usage: magpie worker [options]

Runs agent turns from the bus and scheduled jobs (heartbeat, cron). Run as many as you like.`;

/** Runs the role with the runner the entry (src/main.ts) hands the command line. */
export async function run(argv: string[], runRole: RunRole): Promise<number> {
  return runRoleCommand('worker', argv, HELP, runRole);
}

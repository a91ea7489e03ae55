/** `magpie worker`: runs agent turns from the bus and scheduled jobs (heartbeat, cron). Run as many as you like. */
import { runRoleCommand } from '../../main.js';

const HELP = `usage: magpie worker [options]

Runs agent turns from the bus and scheduled jobs (heartbeat, cron). Run as many as you like.`;

export async function run(argv: string[]): Promise<number> {
  return runRoleCommand('worker', argv, HELP);
}

/** `magpie start`: runs everything in one process: channels, the agent worker and the schedulers. */
import { type RunRole, runRoleCommand } from '../role-command.js';

const HELP = `usage: magpie start [options]

Runs everything in one process: channels, the agent worker and the schedulers.
Without REDIS_URL it starts a private redis-server with a random password (data and
password in MAGPIE_STATE_DIR/redis/, outside the workspace) and stops it on exit.`;

/** Runs the role with the runner the entry (src/main.ts) hands the command line. */
export async function run(argv: string[], runRole: RunRole): Promise<number> {
  return runRoleCommand('start', argv, HELP, runRole);
}

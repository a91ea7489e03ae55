/** `magpie gateway`: runs the channel adapters (every channel its settings enable) and outbound delivery only. */
import { type RunRole, runRoleCommand } from '../role-command.js';

const HELP = `usage: magpie gateway [options]

Runs the channel adapters (every channel its settings turn on, and the CLI channel) and outbound delivery only.`;

/** Runs the role with the runner the entry (src/main.ts) hands the command line. */
export async function run(argv: string[], runRole: RunRole): Promise<number> {
  return runRoleCommand('gateway', argv, HELP, runRole);
}

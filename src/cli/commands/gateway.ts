/** `magpie gateway`: runs the channel adapters (Telegram, Discord, the CLI channel) and outbound delivery only. */
import { runRoleCommand } from '../../main.js';

const HELP = `usage: magpie gateway [options]

Runs the channel adapters (Telegram, Discord, the CLI channel) and outbound delivery only.`;

export async function run(argv: string[]): Promise<number> {
  return runRoleCommand('gateway', argv, HELP);
}

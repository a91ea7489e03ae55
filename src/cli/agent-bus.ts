/**
 * `--agent ID` of `magpie send` and `magpie chat`: the bus of an agent of
 * agents.json, where the message is queued (the answer still comes back
 * through main's prefix, where the gateway's CLI channel keeps replies).
 */
import { agentConfigOf, loadAgentConfigs } from '../agents/load.js';
import { MAIN_AGENT } from '../agents/spec.js';
import { Bus } from '../bus/bus.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../log/index.js';
import { commandEnv, type StartupFlags } from './startup.js';

/** The agent's bus, or undefined for main (no flag, or `--agent main`). Close it when done. */
export async function agentBusOf(
  command: string,
  config: Config,
  flags: StartupFlags & { agent?: string | undefined },
  logger: Logger,
): Promise<Bus | undefined> {
  if (flags.agent === undefined || flags.agent === MAIN_AGENT) return undefined;
  const loaded = loadAgentConfigs(config, commandEnv(flags));
  const agent = agentConfigOf(loaded, flags.agent, `magpie ${command}: --agent ${flags.agent}`);
  return Bus.connect({ config: agent, logger });
}

/**
 * agents.json read once with every agent's configuration beside it: what the
 * roles, the dashboard, status and the CLI's `--agent` all need.
 */
import type { Config } from '../config/index.js';
import { ConfigError } from '../errors/index.js';
import { agentConfig } from './agent-config.js';
import { type AgentsFile, loadAgents, MAIN_AGENT } from './spec.js';

/** The agents of agents.json (main alone without it) and each one's Config (main's is `config` itself without the file). */
export interface LoadedAgents {
  file: AgentsFile;
  configs: ReadonlyMap<string, Config>;
}

/** Reads agents.json and makes each agent's Config. @throws ConfigError (exit 2) for a bad file. */
export function loadAgentConfigs(config: Config, env: NodeJS.ProcessEnv): LoadedAgents {
  const file = loadAgents({
    file: config.agentsFile,
    workspace: config.workspace,
    stateDir: config.stateDir,
  });
  const configs = new Map<string, Config>();
  for (const spec of file.agents)
    configs.set(spec.id, spec.id === MAIN_AGENT && !file.file ? config : agentConfig(config, spec, env));
  return { file, configs };
}

/** The Config of agent `id`. @throws ConfigError naming the agents there are, prefixed by `what` (e.g. "magpie send: --agent x"). */
export function agentConfigOf(loaded: LoadedAgents, id: string, what: string): Config {
  const found = loaded.configs.get(id);
  if (found) return found;
  throw new ConfigError(`${what}: no such agent (${[...loaded.configs.keys()].join(', ')})`);
}

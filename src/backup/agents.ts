/**
 * The other agents of agents.json as a backup reads them: each one's
 * workspace and Redis prefix (`<prefix>-agent-<id>`), and the file itself.
 * `magpie backup` and the scheduled backups both take them from here, so
 * both archives hold every assistant.
 */
import { existsSync } from 'node:fs';
import { loadAgentConfigs } from '../agents/load.js';
import { MAIN_AGENT } from '../agents/spec.js';
import type { RedisBackupStore } from '../bus/backup-store.js';
import type { Config } from '../config/index.js';
import type { AgentSource } from './backup.js';

/** What {@link agentSources} found. */
export interface AgentSources {
  /** Main's workspace (agents.json may move it from MAGPIE_WORKSPACE). */
  workspace: string;
  agents: AgentSource[];
  /** agents.json, when there is one. */
  agentsFile: string | undefined;
}

/**
 * Main's workspace and the other agents of `config`'s agents.json, each with
 * the store of its prefix from `storeOf`. @throws ConfigError (exit 2) for a bad agents.json.
 */
export function agentSources(
  config: Config,
  env: NodeJS.ProcessEnv,
  storeOf: (prefix: string) => Pick<RedisBackupStore, 'snapshot'>,
): AgentSources {
  const { file, configs } = loadAgentConfigs(config, env);
  const agents: AgentSource[] = [];
  for (const [id, agent] of configs) {
    if (id === MAIN_AGENT) continue;
    const prefix = agent.redis.prefix;
    agents.push({ id, workspace: agent.workspace, prefix, store: storeOf(prefix) });
  }
  return {
    workspace: configs.get(MAIN_AGENT)?.workspace ?? config.workspace,
    agents,
    agentsFile: file.file !== undefined && existsSync(file.file) ? file.file : undefined,
  };
}

/**
 * One agent's configuration: `.env`'s, with what agents.json says of the
 * agent on top. Everything an agent keeps apart follows from two fields: its
 * workspace (sessions, memory, notes, skills, the memory index) and its bus
 * prefix (its mailboxes, turn and outbound queues, heartbeat and cron
 * schedules, approvals, `/model` choices, budget counters, workspace claim).
 * `main` keeps `.env`'s prefix, so an existing magpie's state stays its own.
 */
import path from 'node:path';
import { parseModels } from '../config/fallback-models.js';
import type { Config } from '../config/index.js';
import { type AgentSpec, MAIN_AGENT } from './spec.js';

/** The bus prefix of an agent: `.env`'s for main, `<prefix>-agent-<id>` for the others. */
export function agentPrefix(basePrefix: string, id: string): string {
  return id === MAIN_AGENT ? basePrefix : `${basePrefix}-agent-${id}`;
}

/**
 * `base` with the agent's fields applied. `env` resolves `#KEY_VAR` in its fallback models.
 *
 * @example agentConfig(config, { id: 'work', workspacePath: '/srv/work', model: 'gpt-4o' }, process.env)
 */
export function agentConfig(base: Config, spec: AgentSpec, env: NodeJS.ProcessEnv): Config {
  const config = structuredClone(base) as Config & Record<string, unknown>;
  config.workspace = spec.workspacePath;
  config.redis.prefix = agentPrefix(base.redis.prefix, spec.id);
  // Its own memory index and other state, in a folder of the state folder.
  if (spec.id !== MAIN_AGENT) config.stateDir = path.join(base.stateDir, 'agents', spec.id);
  config.agent = {
    ...config.agent,
    id: spec.id,
    ...(spec.name ? { name: spec.name } : {}),
    canAsk: spec.canAsk ?? [],
  };
  if (spec.model !== undefined || spec.fallbackModels !== undefined) {
    const model = spec.model ?? base.llm.model;
    const primary = { model, baseURL: base.llm.baseURL, apiKey: base.llm.apiKey };
    config.llm.model = model;
    config.llm.models = parseModels(spec.fallbackModels?.join(','), primary, env, false);
  }
  if (spec.tools) config.toolFilter = { ...spec.tools };
  if (spec.sandbox) {
    config.sandbox.mode = spec.sandbox;
    if (spec.sandbox === 'full-access') config.tools.execSandbox = 'off';
    if (spec.sandbox !== 'workspace-write') config.sandbox.writableRoots = [];
  }
  if (spec.approval) config.approval.mode = spec.approval;
  if (spec.heartbeatMs !== undefined) config.heartbeat.intervalMs = spec.heartbeatMs;
  if (spec.heartbeat?.activeHours !== undefined) config.heartbeat.activeHours = spec.heartbeat.activeHours;
  if (spec.budget) {
    const b = spec.budget;
    if (b.daily !== undefined) config.budget.daily = b.daily;
    if (b.monthly !== undefined) config.budget.monthly = b.monthly;
    if (b.chatDaily !== undefined) config.budget.chatDaily = b.chatDaily;
    if (b.dailyTokens !== undefined) config.budget.dailyTokens = b.dailyTokens;
  }
  return Object.freeze(config);
}

/**
 * The agent side of the composition root: provider, sessions, memory, skills,
 * tools (from the catalog, src/tools/catalog.ts: spawn when a helper queue is
 * given, cron when a cron store is), context,
 * the helper runner and the AgentLoop, built from one Config. Used by
 * `magpie agent` and by the bus worker, so both run the same turn.
 */

import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { ContextBuilder } from '../agent/context.js';
import type { PromptEnvironment } from '../agent/environment-block.js';
import { AgentLoop } from '../agent/loop.js';
import type { ModelChoiceStore, OutboundSink, StateStore } from '../agent/ports.js';
import type { ApprovalRules, TurnApprovals } from '../approvals/ports.js';
import { unattendedApprovals } from '../approvals/unattended.js';
import type { Budget } from '../budget/budget.js';
import { BudgetedProvider } from '../budget/budgeted-provider.js';
import { usageText } from '../budget/report.js';
import type { Config } from '../config/index.js';
import { secretValues } from '../config/secrets.js';
import { AppError, ExitCode } from '../errors/index.js';
import { HelperRunner } from '../helpers/runner.js';
import { DEFAULT_MAX_DEPTH, HELPER_MAX_ITERATIONS, type HelperTracker } from '../helpers/types.js';
import type { Logger } from '../log/index.js';
import { forget } from '../memory/history/forget.js';
import { MemoryHistory } from '../memory/history/history.js';
import { MemoryIndex } from '../memory/search/memory-index.js';
import { MemoryStore } from '../memory/store.js';
import type { CooldownStore } from '../providers/cooldown.js';
import type { LLMProvider } from '../providers/types.js';
import { JsonlSessionStore } from '../sessions/jsonl-store.js';
import type { SessionStore } from '../sessions/types.js';
import { SkillsLoader } from '../skills/loader.js';
import type { AgentAsker } from '../tools/ask-agent.js';
import { buildTools } from '../tools/catalog.js';
import type { CronTaskStore } from '../tools/cron.js';
import { ToolRegistry } from '../tools/registry.js';
import { resolveSandbox, type SandboxStatus, sandboxAccess } from '../tools/sandbox.js';
import { searchBackendFor } from '../tools/search-backends/index.js';
import type { HelperQueue } from '../tools/spawn.js';
import { MemoryVoiceChoiceStore, type VoiceChoiceStore } from '../voice/voice-choice.js';
import { memoryEmbedder } from './memory-embedder.js';

/** Tools that come and go while the agent runs (the MCP servers' tools, see src/mcp/manager.ts). */
export interface DynamicTools {
  /** Puts the tools into `registry` and keeps them current there. */
  attach(registry: ToolRegistry): void;
}

/** Everything buildAgent made, for callers that need more than the loop (status, tools for helpers). */
export interface AgentParts {
  agent: AgentLoop;
  provider: LLMProvider;
  sessions: SessionStore;
  memory: MemoryStore;
  tools: ToolRegistry;
  context: ContextBuilder;
  skills: SkillsLoader;
  /** Runs helpers (subagent in a turn; spawned helper jobs in the worker). */
  helpers: HelperRunner;
}

export interface BuildAgentOptions {
  config: Config;
  logger: Logger;
  /** Where the message tool's sends go (the bus in the daemon, stdout for `magpie agent`). */
  outbound: OutboundSink;
  /** The last active chat, for heartbeat replies (Redis in the daemon; none for `magpie agent`). */
  state?: StateStore;
  /** The scheduled tasks (the bus in the daemon). Without it there is no `cron` tool. */
  cronStore?: CronTaskStore;
  /** A ready provider (tests); by default every model of `config.llm` behind a FallbackProvider. */
  provider?: LLMProvider;
  /** Cool-downs of failing models (Redis in the daemon, shared by the workers). @defaultValue in memory */
  cooldowns?: CooldownStore;
  /** Each chat's model (`/model`): Redis in the daemon, a file in the state folder for `magpie agent`. @defaultValue in memory */
  modelChoices?: ModelChoiceStore;
  /** Where `spawn` queues helper jobs (the bus in the daemon). Without it there is no `spawn` tool. */
  helperQueue?: HelperQueue;
  /** Records running helpers for `magpie status`. @defaultValue the log only */
  helperTracker?: HelperTracker;
  /** The other agents this one may ask (agents.json `canAsk`). Without it there is no `ask_agent` tool. */
  askAgent?: AgentAsker;
  /** Delegation depth limit of helpers. @defaultValue 2 */
  maxHelperDepth?: number;
  /** The MCP servers' tools (startMcp); none without an mcp.json. */
  mcp?: DynamicTools;
  /** Where exec runs, when already settled (the daemon settles it before starting). @defaultValue resolveExecSandbox(config, logger) */
  execSandbox?: SandboxStatus;
  /** The chats' "always allow" rules (Redis in the daemon, a file for `magpie agent`), for /approvals. */
  approvalRules?: ApprovalRules;
  /** Spending limits and usage (Redis in the daemon): every model call is held to them. @defaultValue none */
  budget?: Budget;
  /** Each chat's `/voice` choice (Redis in the daemon). @defaultValue in memory */
  voiceChoices?: VoiceChoiceStore;
}

/**
 * Builds the agent for `config.workspace`.
 *
 * @throws AppError WORKSPACE_MISSING (exit 2) when the workspace folder does not exist.
 * @example
 * const { agent } = await buildAgent({ config, logger, outbound });
 * const { reply } = await agent.processDirect('hello', 'cli:default');
 */
export async function buildAgent(options: BuildAgentOptions): Promise<AgentParts> {
  const { config, logger } = options;
  const [workspace, models, execSandbox] = await Promise.all([
    existingWorkspace(config.workspace),
    options.provider ?? modelProvider(config, logger, options.cooldowns),
    options.execSandbox ?? resolveExecSandbox(config, logger),
  ]);
  // Outermost, so turns, summaries, flushes and helpers are all held to the limits.
  const { budget } = options;
  const provider = budget ? new BudgetedProvider({ provider: models, budget, logger }) : models;
  const secrets = secretValues(config);
  const sessions = new JsonlSessionStore({ dir: path.join(workspace, 'sessions'), logger });
  const memory = new MemoryStore({ workspace, timezone: config.timezone });
  const history = new MemoryHistory({ workspace, logger });
  const skills = new SkillsLoader({ dir: path.join(workspace, 'skills'), logger });
  const contextFor = (registry: ToolRegistry) =>
    new ContextBuilder({
      workspace,
      memory,
      skills,
      tools: () => registry.summaries(),
      timezone: config.timezone,
      logger,
      environment: promptEnvironment(config),
    });
  const contextTokens = config.llm.contextTokens ? { contextTokens: config.llm.contextTokens } : {};
  const helpers = new HelperRunner({
    tools: () => tools,
    makeLoop: (helperTools) =>
      new AgentLoop({
        provider,
        tools: helperTools,
        sessions,
        context: contextFor(helperTools),
        logger,
        outbound: { publish: async () => undefined },
        workspace,
        maxIterations: Math.min(HELPER_MAX_ITERATIONS, config.agent.maxIterations),
        ...contextTokens,
      }),
    logger,
    ...(options.helperTracker ? { tracker: options.helperTracker } : {}),
    maxDepth: options.maxHelperDepth ?? DEFAULT_MAX_DEPTH,
    ...(budget ? { budget } : {}),
    // A helper cannot wait for a person: what would ask is denied, and the main turn can ask instead.
    ...definedApprovals(
      unattendedApprovals({
        mode: config.approval.mode,
        execNetwork: config.tools.execNetwork,
        onDenied: (summary) => logger.info({ summary }, 'helper call not approved: helpers cannot ask'),
      }),
    ),
  });
  const tools: ToolRegistry = await agentTools(options, {
    workspace,
    secrets,
    execSandbox,
    skills,
    helpers,
    history,
  });
  options.mcp?.attach(tools);
  const context = contextFor(tools);
  const agent = new AgentLoop({
    provider,
    tools,
    sessions,
    context,
    logger,
    outbound: options.outbound,
    ...(options.state ? { state: options.state } : {}),
    workspace,
    maxIterations: config.agent.maxIterations,
    ...contextTokens,
    transcribe: config.llm.transcribeModel !== undefined,
    // The flush is the model writing memory with the file tools, which a read-only workspace refuses.
    memoryFlush: config.sandbox.mode !== 'read-only',
    // The flush turn has nobody to ask: with approvals on it gets no exec and no MCP tools.
    flushTools: tools.without('message', 'spawn', 'subagent', 'cron', ...unaskedTools(config, tools)),
    ...(options.approvalRules ? { approvalRules: options.approvalRules } : {}),
    ...(config.prices ? { prices: config.prices } : {}),
    ...(options.modelChoices ? { modelChoices: options.modelChoices } : {}),
    voice: {
      choices: options.voiceChoices ?? new MemoryVoiceChoiceStore(),
      speaks: config.voice.engine !== 'off',
    },
    ...(budget ? { usage: { usageText: (session: string) => usageText(budget, session) } } : {}),
    forget: async (argument) => (await forget(history, argument)).reply,
  });
  return { agent, provider, sessions, memory, tools, context, skills, helpers };
}

/** `{ approvals }` when there are approvals to pass. */
function definedApprovals(approvals: TurnApprovals | undefined): { approvals?: TurnApprovals } {
  return approvals ? { approvals } : {};
}

/** Tools a turn without anyone to ask must not have when approvals are on: exec and the MCP tools. */
function unaskedTools(config: Config, tools: ToolRegistry): string[] {
  if (config.approval.mode === 'off') return [];
  return ['exec', ...tools.names().filter((name) => tools.facts(name)?.mcp === true)];
}

/**
 * The agent's tools: every catalog tool whose needs the config and the caller
 * meet (web_search with a search backend, spawn with a helper queue, cron with
 * a cron store).
 */
async function agentTools(
  options: BuildAgentOptions,
  built: {
    workspace: string;
    secrets: string[];
    execSandbox: SandboxStatus;
    skills: SkillsLoader;
    helpers: HelperRunner;
    history: MemoryHistory;
  },
): Promise<ToolRegistry> {
  const { config, logger } = options;
  const { workspace, secrets, execSandbox } = built;
  const searchBackend = searchBackendFor(config.search);
  const embedder = memoryEmbedder(config, logger, options.budget);
  return new ToolRegistry(
    await buildTools({
      workspace,
      execTimeoutMs: config.tools.execTimeoutMs,
      execWorkspaceMaxBytes: config.tools.workspaceMaxBytes,
      webAllowPrivate: config.tools.webAllowPrivate,
      secrets,
      ...(execSandbox.kind === 'bwrap' ? { execSandbox: execSandbox.sandbox } : {}),
      ...(execSandbox.kind === 'disabled' ? { execDisabled: true } : {}),
      execProtectedPaths: [path.resolve('.env'), config.stateDir],
      workspaceReadOnly: config.sandbox.mode === 'read-only',
      ...(searchBackend ? { searchBackend } : {}),
      memoryIndex: new MemoryIndex({
        workspace,
        stateDir: config.stateDir,
        timezone: config.timezone,
        logger,
        secrets,
        ...(embedder ? { embedder } : {}),
      }),
      skills: built.skills,
      helpers: built.helpers,
      memoryHistory: built.history,
      ...(options.helperQueue ? { helperQueue: options.helperQueue } : {}),
      ...(options.cronStore ? { cronStore: options.cronStore } : {}),
      ...(options.askAgent ? { askAgent: options.askAgent } : {}),
      config,
    }),
    { secrets, defaultTimeLimitMs: config.tools.timeoutMs, allows: toolAllows(config) },
  );
}

/** agents.json's `tools.allow`/`deny` as a test of a tool's name (MCP tools too); unset: every tool. */
function toolAllows(config: Config): (name: string) => boolean {
  const allow = config.toolFilter?.allow;
  const deny = config.toolFilter?.deny ?? [];
  return (name) => (allow === undefined || allow.includes(name)) && !deny.includes(name);
}

/**
 * Settles where exec runs (MAGPIE_EXEC_SANDBOX, MAGPIE_EXEC_NETWORK): a bwrap
 * sandbox that passed a probe run; none with MAGPIE_EXEC_SANDBOX=off; or, when
 * `auto` found no working bwrap, nowhere — exec is disabled (fails closed),
 * with one warning saying why. The sandbox hides a legacy `<workspace>/.redis`, and the
 * state folder and `.env` should they lie inside the workspace.
 *
 * @throws ConfigError (exit 2) for MAGPIE_EXEC_SANDBOX=bwrap when bwrap cannot run here.
 * @throws AppError WORKSPACE_MISSING (exit 2) when the workspace folder does not exist.
 */
export async function resolveExecSandbox(config: Config, logger: Logger): Promise<SandboxStatus> {
  const workspace = await existingWorkspace(config.workspace);
  const hidden = await Promise.all(
    [path.join(workspace, '.redis'), config.stateDir, path.resolve('.env')].map((p) =>
      realpath(p).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return p;
        throw err;
      }),
    ),
  );
  const status = await resolveSandbox(config.tools.execSandbox, {
    workspace,
    ...sandboxAccess(config),
    network: config.tools.execNetwork,
    hidden,
    timezone: config.timezone,
    execUser: config.tools.execUser,
    ...(config.tools.bwrapPath ? { bwrapPath: config.tools.bwrapPath } : {}),
    limits: { memoryBytes: config.tools.execMemoryBytes, fileSizeBytes: config.tools.execMaxWriteBytes },
    probeCache: path.join(config.stateDir, 'sandbox-probe.json'),
  });
  if (status.kind === 'disabled') {
    logger.warn(
      `exec is disabled: no sandbox could be started (${status.reason}); install bubblewrap (apt-get install bubblewrap), or set MAGPIE_EXEC_SANDBOX=off to run commands unsandboxed`,
    );
  } else if (status.kind === 'bwrap' && !status.sandbox.limitsProcesses) {
    logger.warn(
      `exec sandbox: ${status.sandbox.processLimit}; run magpie as a normal user to limit processes`,
    );
  } else if (status.kind === 'bwrap') {
    logger.info(`exec sandbox: ${status.sandbox.describe()}`);
  }
  return status;
}

/** The environment section of the system prompt, from the configuration only (so it never changes in a run). */
export function promptEnvironment(config: Config): PromptEnvironment {
  return {
    approval: config.approval.mode,
    sandbox: config.sandbox.mode,
    // Without a sandbox a command shares the host's network whatever MAGPIE_EXEC_NETWORK says.
    network: config.sandbox.mode === 'full-access' || config.tools.execNetwork,
    writableRoots: config.sandbox.writableRoots,
  };
}

async function existingWorkspace(dir: string): Promise<string> {
  const missing = () =>
    new AppError('WORKSPACE_MISSING', `workspace ${dir} not found: run "npx magpie init"`, {
      exitCode: ExitCode.config,
    });
  try {
    if (!(await stat(dir)).isDirectory()) throw missing();
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw missing();
  }
  return realpath(dir);
}

/** Loaded lazily: tests and callers with their own provider never load the openai SDK. */
async function modelProvider(
  config: Config,
  logger: Logger,
  cooldowns?: CooldownStore,
): Promise<LLMProvider> {
  const { buildProvider } = await import('./build-provider.js');
  return buildProvider(config, logger, cooldowns);
}

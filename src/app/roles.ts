/**
 * The roles' composition, driven by `src/main.ts` (the entry, which runs it
 * until a signal). Builds every part of one role from the Config:
 * `start` (private Redis if needed + gateway + worker + scheduler),
 * `gateway` (channels and outbound delivery) or `worker` (turns and
 * schedules). Shuts down in order: intake → workers → queues → Redis.
 */
import path from 'node:path';
import { visionCapable } from '../agent/model-vision.js';
import type { StateStore } from '../agent/ports.js';
import type { AgentRunner } from '../agent/types.js';
import { agentConfigOf, type LoadedAgents, loadAgentConfigs } from '../agents/load.js';
import { agentFor } from '../agents/routes.js';
import { type AgentsFile, MAIN_AGENT } from '../agents/spec.js';
import { Budget } from '../budget/budget.js';
import { BackupQueue } from '../bus/backup-queue.js';
import { RedisBackupStore } from '../bus/backup-store.js';
import { Bus } from '../bus/bus.js';
import type { ConsumerTuning } from '../bus/consumer.js';
import type { CronStore } from '../bus/cron-store.js';
import { DeadHolders } from '../bus/dead-holders.js';
import { opsKeys } from '../bus/keys.js';
import { type LocalRedis, startLocalRedis } from '../bus/local-redis.js';
import type { ChannelStartDeps } from '../channels/descriptor.js';
import { enabledChannels } from '../channels/registry.js';
import type { Channel } from '../channels/types.js';
import { WebhookListener } from '../channels/webhooks.js';
import { type Config, environment, streamsTo } from '../config/index.js';
import { OutboundDelivery } from '../delivery/outbound-delivery.js';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { startMcp } from '../mcp/start.js';
import { startTracing } from '../telemetry/start-tracing.js';
import { type AgentAsker, ASK_CHAT_PREFIX, ASK_TIME_LIMIT_MS } from '../tools/ask-agent.js';
import type { SandboxStatus } from '../tools/sandbox.js';
import type { HelperQueue } from '../tools/spawn.js';
import { HashVoiceChoiceStore } from '../voice/voice-choice.js';
import { TurnWorker, type TurnWorkerOptions } from '../worker/turn-worker.js';
import type { AgentParts } from './build-agent.js';
import { checkWorkspaceIdentity } from './workspace-check.js';

export type Role = 'start' | 'gateway' | 'worker';

export interface RoleOptions {
  role: Role;
  config: Config;
  logger: Logger;
  /** Turns at once in this worker. @defaultValue config.redis.concurrency */
  concurrency?: number;
  /** Lock and stall timing of turn jobs (defaults in ConsumerTuning). */
  tuning?: ConsumerTuning;
  /** How long shutdown waits for running turns. @defaultValue 60000 */
  shutdownTimeoutMs?: number;
  /** magpie's environment with the flags on top, for `${VAR}` in mcp.json. @defaultValue process.env */
  env?: NodeJS.ProcessEnv;
  /** A worker serving one agent of agents.json only (`magpie worker --agent ID`). @defaultValue every agent */
  agent?: string;
}

/** A running role; `stop()` shuts it down in order (same promise every time). */
export interface RunningRole {
  bus: Bus;
  stop(): Promise<void>;
}

interface Part {
  name: string;
  close(): Promise<void>;
}

/** Builds and starts the parts of a role. */
/** How often a running process looks for a killed one of this host whose jobs are still held. */
const DEAD_HOLDERS_LOOK_MS = 3_000;

export async function startRole(options: RoleOptions): Promise<RunningRole> {
  const { role, config, logger } = options;
  const parts: Part[] = [];
  // Where exec runs is settled before anything starts: MAGPIE_EXEC_SANDBOX=bwrap
  // without a working bwrap ends here (exit 2); auto without one disables exec (one warning).
  const execSandbox =
    role === 'gateway'
      ? undefined
      : await (await import('./build-agent.js')).resolveExecSandbox(config, logger);
  // Off unless the OTEL_* variables ask: then the SDK is loaded here (a dynamic import), once per process.
  const tracing = await startTracing({ config: config.tracing, service: `magpie-${role}`, logger });
  let local: LocalRedis | undefined;
  if (role === 'start' && !config.redis.url && !config.redis.sentinel && !config.redis.cluster) {
    local = await startLocalRedis({ workspace: config.workspace, stateDir: config.stateDir, logger });
  }
  // Channels publish through a bus that fails fast when Redis is away; the
  // worker's bus waits for Redis to come back (a restart must not use up turn attempts).
  const buses: Bus[] = [];
  // This process's consumers, so that this host hands their jobs back at once if it is killed.
  const deadHolders = new DeadHolders(path.join(config.stateDir, 'consumers'), logger);
  let lookForDead: NodeJS.Timeout | undefined;
  const closeBuses = async () => {
    clearInterval(lookForDead);
    for (const b of buses) await b.close();
    deadHolders.remove();
    await local?.stop();
    await tracing.shutdown();
  };
  try {
    // agents.json: the assistants this bus serves (main alone without the file); a bad file ends here (exit 2).
    const agents = agentsOf(options);
    const connect = async (agentConfig: Config, patient: boolean) => {
      const bus = await Bus.connect({
        config: agentConfig,
        logger,
        url: local?.url,
        tracing,
        deadHolders,
        ...(patient ? { patient } : {}),
      });
      buses.push(bus);
      return bus;
    };
    const gatewayBus = role !== 'worker' ? await connect(config, false) : undefined;
    const workerBus = role !== 'gateway' ? await connect(config, true) : undefined;
    // A process whose workspace is not the bus's refuses here, before it takes any message.
    await checkWorkspaceIdentity({
      bus: (gatewayBus ?? workerBus) as Bus,
      workspace: config.workspace,
      logger,
    });
    // Gateway first, so closing (in reverse) stops the worker's intake and turns before delivery drains.
    const agentBuses = new Map<string, Bus>();
    if (gatewayBus) {
      agentBuses.set(MAIN_AGENT, gatewayBus);
      for (const [id, agentConfig] of agents.configs)
        if (id !== MAIN_AGENT) agentBuses.set(id, await connect(agentConfig, false));
      parts.push(...(await startGateway(gatewayBus, options, agents, agentBuses)));
    }
    // ask_agent's way to the others: each agent's bus, connected when first asked.
    const asked = new Map<string, Promise<Bus>>();
    const agentBus = (id: string): Promise<Bus> => {
      const agentConfig = agents.configs.get(id);
      if (!agentConfig) return Promise.reject(new Error(`no agent "${id}"`));
      let bus = asked.get(id);
      if (!bus) {
        bus = connect(agentConfig, true);
        asked.set(id, bus);
      }
      return bus;
    };
    if (workerBus) {
      for (const [id, agentConfig] of agents.configs) {
        if (options.agent !== undefined && options.agent !== id) continue;
        const bus = id === MAIN_AGENT ? workerBus : await connect(agentConfig, true);
        if (id !== MAIN_AGENT)
          await checkWorkspaceIdentity({ bus, workspace: agentConfig.workspace, logger });
        const sandbox =
          id === MAIN_AGENT
            ? execSandbox
            : await (await import('./build-agent.js')).resolveExecSandbox(agentConfig, logger);
        parts.push(
          ...(await startWorker(bus, { ...options, config: agentConfig, execSandbox: sandbox, agentBus })),
        );
      }
    }
    if (role !== 'worker' && config.dashboard.port)
      parts.push(await startDashboardPart(buses[0] as Bus, options, agents, agentBuses));
    // Once this process takes jobs: what a killed one held goes back now, and every few seconds after.
    let looking: Promise<unknown> = Promise.resolve();
    const handBack = () => {
      looking = looking
        .then(() => deadHolders.reclaim((prefix) => buses.find((b) => b.prefix === prefix)?.redis))
        .catch((err: unknown) =>
          logger.warn({ err: describeError(err) }, 'looking for killed processes failed'),
        );
      return looking;
    };
    await handBack();
    lookForDead = setInterval(() => void handBack(), DEAD_HOLDERS_LOOK_MS);
    lookForDead.unref();
  } catch (err) {
    await closeAll(parts, logger);
    await closeBuses();
    throw err;
  }
  const bus = buses[0] as Bus;
  logger.info({ role, redis: local ? 'private' : bus.describe(), prefix: bus.prefix }, 'magpie is running');
  let stopping: Promise<void> | undefined;
  return {
    bus,
    stop() {
      stopping ??= (async () => {
        await closeAll(parts, logger);
        await closeBuses();
        logger.info({ role }, 'magpie stopped');
      })();
      return stopping;
    },
  };
}

/** What the worker's steps share: its bus and the options of the role. */
type WorkerOptions = RoleOptions & {
  execSandbox?: SandboxStatus;
  /** The bus of another agent, for ask_agent (connected once, closed with the role). */
  agentBus?: (agent: string) => Promise<Bus>;
};

/**
 * The worker's parts, in start order (closed in reverse): MCP servers, the cron
 * store, the helper queue, the turn worker with its heartbeat, the helper
 * worker and the scheduler.
 */
async function startWorker(bus: Bus, options: WorkerOptions): Promise<Part[]> {
  const { config, logger } = options;
  const parts: Part[] = [];
  const state: StateStore = bus.stateStore();
  const scheduler = await import('../scheduler/index.js');
  const { startMemoryJobs } = await import('./memory-jobs.js');
  const helpersModule = await import('../helpers/index.js');
  const helperQueue = new helpersModule.HelpersQueue(bus, logger);
  const mcp = await startMcpServers(options);
  // Closed last of the worker's parts: after the turns and helpers that may still call their tools.
  if (mcp) parts.push({ name: 'mcp servers', close: () => mcp.close() });
  // One store of scheduled tasks for the cron tool and the heartbeat's schedule, closed after the turns using it.
  const cronStore = bus.cronStore();
  parts.push({ name: 'cron store', close: () => cronStore.close() });
  const budget = workerBudget(bus, state, options);
  const built = await buildWorkerAgent(bus, options, { state, helperQueue, cronStore, mcp, budget });
  const agent: AgentRunner = built.agent;
  // The voice code (and marked, which makes answers speakable) loads only when MAGPIE_TTS is on.
  const voice =
    config.voice.engine === 'off'
      ? undefined
      : await (await import('./build-voice.js')).buildVoiceReplies({
          voice: config.voice,
          bus,
          totalsKey: opsKeys.totals(bus.prefix),
          budget,
          logger,
        });
  const { worker, beat } = await startTurnWorker(bus, agent, { ...options, ...(voice ? { voice } : {}) });
  // Spawned helpers run as jobs of their own queue, beside the chats (and are redone if this process dies).
  const helperWorker = new helpersModule.HelperWorker({
    bus,
    runner: built.helpers,
    logger,
    concurrency: options.concurrency ?? config.redis.concurrency,
    ...definedOnly(options.tuning ?? {}),
    shutdownTimeoutMs: options.shutdownTimeoutMs,
  });
  await helperWorker.start();
  parts.push({ name: 'helper queue', close: () => helperQueue.close() });
  // MEMORY.md's history and its daily consolidation (a job of the scheduled queue).
  const memory = await startMemoryJobs({
    config,
    connection: bus.redis,
    prefix: bus.prefix,
    provider: built.provider,
    logger,
  });
  parts.push({ name: 'memory upkeep', close: () => memory.close() });
  // Heartbeat and cron: BullMQ job schedulers, so one fires per tick however many workers run.
  const schedule = await scheduler.startScheduler({
    ...{ config, bus, agent, state, logger, store: cronStore, budget, jobs: memory.jobs },
  });
  // Closed in reverse: the scheduler (intake) first, then the turn worker, then the agent's background work.
  parts.push({ name: 'worker heartbeat', close: () => beat.close() });
  parts.push({ name: 'agent', close: () => built.agent.idle() });
  parts.push({ name: 'turn worker', close: () => worker.close() });
  parts.push({ name: 'helper worker', close: () => helperWorker.close() });
  parts.push({ name: 'scheduler', close: () => schedule.close() });
  if (config.agent.id === MAIN_AGENT) {
    const backups = await startBackups(bus, config, logger);
    parts.push({ name: 'backups', close: () => backups.close() });
  }
  return parts;
}

/** MAGPIE_BACKUP_SCHEDULE's daily backup: one job per day across every worker (src/backup/schedule.ts); unset removes it. */
async function startBackups(bus: Bus, config: Config, logger: Logger): Promise<BackupQueue> {
  const store = new RedisBackupStore(bus.redis, bus.prefix);
  const { schedule, dir, keep } = config.backup;
  const queue = new BackupQueue({
    redis: bus.redis,
    workerConnection: () => bus.createConsumerConnection(),
    prefix: bus.prefix,
    repeat: schedule && { ...schedule, timezone: config.timezone },
    logger,
    run: async (tick) => {
      // Loaded at the first tick, not at start-up: the archive and sealing code (tar, age and its
      // curves, about 1 MB of source) would otherwise sit in every worker's heap for a daily job.
      const { scheduledBackup } = await import('../backup/schedule.js');
      const { agentSources } = await import('../backup/agents.js');
      // Read at each tick: an agent added since start-up is in the next backup.
      const { workspace, agents, agentsFile } = agentSources(
        config,
        environment(),
        (prefix) => new RedisBackupStore(bus.redis, prefix),
      );
      const options = {
        workspace,
        agents,
        agentsFile,
        stateDir: config.stateDir,
        prefix: bus.prefix,
        dir,
        keep,
      };
      await scheduledBackup({ ...options, envFile: path.resolve('.env'), store, logger }, tick.at);
    },
  });
  await queue.start();
  return queue;
}

/**
 * The spending limits every model call of this worker is held to, counted in
 * Redis with the other workers'; the 80 % notice goes to the owner's last chat.
 */
function workerBudget(bus: Bus, state: StateStore, options: WorkerOptions): Budget {
  const { config, logger } = options;
  return new Budget({
    config: config.budget,
    store: bus.budgetStore(),
    timezone: config.timezone,
    logger,
    notify: async (content, id) => {
      const target = await state.getLastChannel();
      if (!target) return;
      await bus.publishOutbound({
        id,
        channel: target.channel,
        chatId: target.chatId,
        ...(target.threadId ? { threadId: target.threadId } : {}),
        content,
        kind: 'message',
        metadata: { budget: id },
      });
    },
  });
}

/**
 * Starts the MCP servers of mcp.json in parallel before the first turn; without the
 * file nothing of MCP loads. Their images are kept when any model sees; the
 * provider puts a note in their place for one that does not.
 */
function startMcpServers(options: WorkerOptions): ReturnType<typeof startMcp> {
  const { config, logger } = options;
  return startMcp({
    config,
    logger,
    env: options.env ?? process.env,
    vision: config.llm.models.some((m) => visionCapable(m.model, config.vision)),
  });
}

/** The worker's agent: its tools reach the bus (outbound, spawn, cron); closes the cron store and MCP if building fails. */
async function buildWorkerAgent(
  bus: Bus,
  options: WorkerOptions,
  parts: {
    state: StateStore;
    helperQueue: HelperQueue;
    cronStore: CronStore;
    mcp: Awaited<ReturnType<typeof startMcp>>;
    budget: Budget;
  },
): Promise<AgentParts> {
  const { config, logger } = options;
  const { buildAgent } = await import('./build-agent.js');
  const { cronStore, mcp } = parts;
  try {
    return await buildAgent({
      config,
      logger,
      outbound: { publish: (message) => bus.publishOutbound(message) },
      state: parts.state,
      cronStore,
      helperQueue: parts.helperQueue,
      helperTracker: bus.helperTracker(),
      // Shared by every worker: a failing model rests for all of them; a chat's /model holds everywhere.
      cooldowns: bus.cooldownStore(),
      modelChoices: bus.modelChoiceStore(),
      voiceChoices: new HashVoiceChoiceStore(bus.redis, bus.prefix),
      approvalRules: bus.approvals,
      budget: parts.budget,
      ...(options.agentBus && config.agent.canAsk.length > 0
        ? { askAgent: agentAsker(config, options.agentBus) }
        : {}),
      ...(mcp ? { mcp } : {}),
      ...(options.execSandbox ? { execSandbox: options.execSandbox } : {}),
    });
  } catch (err) {
    await cronStore.close();
    await mcp?.close();
    throw err;
  }
}

/**
 * Starts the turn worker and its beat (`<prefix>:workers:<id>` with a TTL: status,
 * doctor and the dashboard see this worker alive).
 */
async function startTurnWorker(
  bus: Bus,
  agent: AgentRunner,
  options: WorkerOptions & { voice?: TurnWorkerOptions['voice'] },
) {
  const { config, logger } = options;
  const concurrency = options.concurrency ?? config.redis.concurrency;
  const worker = new TurnWorker({
    bus,
    agent,
    logger,
    tracing: bus.tracing,
    concurrency,
    timezone: config.timezone,
    streams: (channel) => streamsTo(config, channel),
    approval: {
      mode: config.approval.mode,
      timeoutMs: config.approval.timeoutMs,
      execNetwork: config.tools.execNetwork,
      unattended: config.approval.unattended,
    },
    ...definedOnly(options.tuning ?? {}),
    shutdownTimeoutMs: options.shutdownTimeoutMs,
    ...(options.voice ? { voice: options.voice } : {}),
  });
  await worker.start();
  const beat = bus.workerHeartbeat({ id: worker.id, concurrency, logger });
  await beat.start();
  return { worker, beat };
}

/**
 * ask_agent's port: the question goes to the other agent's bus as a CLI message in the session
 * `cli:ask-<asker>` and the answer comes back through its reply list (channels/cli/client.ts).
 * The question is wrapped so it is never read as a chat command (an asker must not answer the
 * other agent's approval questions with `/approve`).
 */
function agentAsker(config: Config, agentBus: (agent: string) => Promise<Bus>): AgentAsker {
  const self = config.agent.id;
  const chatId = `${ASK_CHAT_PREFIX}${self}`;
  return {
    self,
    agents: config.agent.canAsk,
    async ask(agent, question, signal, trace) {
      const bus = await agentBus(agent);
      // The gateway's CLI channel keeps every agent's replies under main's prefix.
      const replies = await agentBus(MAIN_AGENT);
      const stop = () => void bus.cancel(`cli:${chatId}`).catch(() => false);
      signal.addEventListener('abort', stop, { once: true });
      try {
        const { sendAndWait } = await import('../channels/cli/client.js');
        const reply = await sendAndWait(replies, {
          content: `The assistant "${self}" asks you:\n\n${question}`,
          chatId,
          timeoutMs: ASK_TIME_LIMIT_MS,
          publishTo: bus,
          ...(trace ? { trace } : {}),
        });
        if (reply.kind === 'error') throw new Error(reply.content);
        return reply.content;
      } finally {
        signal.removeEventListener('abort', stop);
      }
    },
  };
}

/** The agents of agents.json with their configurations (main's is `.env`'s), checked before anything starts. */
function agentsOf(options: RoleOptions): LoadedAgents {
  const loaded = loadAgentConfigs(options.config, options.env ?? environment());
  if (options.agent !== undefined) agentConfigOf(loaded, options.agent, `--agent ${options.agent}`);
  return loaded;
}

/**
 * The channels, each with its outbound delivery from every agent's bus. With
 * several agents, the gateway's bus sends each inbound message to its agent's
 * bus (agents.json's routes) and `/stop` and answers to all.
 */
async function startGateway(
  bus: Bus,
  options: RoleOptions,
  agents: { file: AgentsFile },
  agentBuses: ReadonlyMap<string, Bus>,
): Promise<Part[]> {
  const { config, logger } = options;
  if (agentBuses.size > 1) {
    const all = [...agentBuses.values()];
    bus.routeInbound({
      busFor: (message) => agentBuses.get(agentFor(message, agents.file)) ?? bus,
      all: () => all,
    });
  }
  // Webhook channels mount their routes on it while they start; it listens once they all have.
  const webhooks = new WebhookListener({ port: config.webhook.port, host: config.webhook.host, logger });
  const deps: ChannelStartDeps = { config, bus, logger, pairing: bus.pairingStore(), webhooks };
  // Every registered channel its settings enable (src/channels/registry.ts), in registry order.
  const channels: Channel[] = [];
  for (const { descriptor, settings } of enabledChannels(config)) {
    // A channel with named bot accounts gives one instance per bot (telegram, telegram-family…).
    channels.push(...[await descriptor.create(deps, settings)].flat());
  }
  const parts: Part[] = [];
  for (const channel of channels) {
    const live = streamsTo(config, channel.name);
    // Every agent's answers to this channel: one delivery per agent's outbound queue.
    const deliveries: OutboundDelivery[] = [];
    for (const agentBus of agentBuses.values())
      deliveries.push(
        await OutboundDelivery.start({ bus: agentBus, channel, logger, live, tracing: agentBus.tracing }),
      );
    await channel.start();
    // Closed in reverse: the channel stops after its queues have drained and their consumers closed.
    parts.push({ name: `${channel.name} channel`, close: () => channel.stop() });
    parts.push({
      name: `${channel.name} delivery`,
      close: async () => {
        for (const delivery of deliveries) await delivery.drained(10_000);
        for (const delivery of deliveries) await delivery.close();
      },
    });
  }
  // Closed first (parts close in reverse): no webhook is taken once the channels begin to stop.
  try {
    if (await webhooks.listen()) parts.push({ name: 'webhook listener', close: () => webhooks.close() });
    else if (config.webhook.port !== undefined)
      logger.info('MAGPIE_WEBHOOK_PORT is set but no channel takes webhooks: nothing listens on it');
  } catch (err) {
    await closeAll(parts, logger);
    throw err;
  }
  return parts;
}

/**
 * The dashboard inside `start`/`gateway` when MAGPIE_DASHBOARD_PORT is set, showing every agent
 * through the gateway's bus for it; logs its URL and where its token is.
 */
async function startDashboardPart(
  bus: Bus,
  options: RoleOptions,
  agents: { file: AgentsFile; configs: ReadonlyMap<string, Config> },
  agentBuses: ReadonlyMap<string, Bus>,
): Promise<Part> {
  const { startDashboard } = await import('../ops/dashboard-server.js');
  const { loadDashboardToken } = await import('../ops/dashboard-auth.js');
  const { createWebChatRouter } = await import('../channels/web/routes.js');
  const { JsonlSessionStore } = await import('../sessions/jsonl-store.js');
  const sessions = new JsonlSessionStore({
    dir: `${options.config.workspace}/sessions`,
    logger: options.logger,
  });
  const access = loadDashboardToken({
    configured: options.config.dashboard.token,
    stateDir: options.config.stateDir,
  });
  const { dashboardAgents } = await import('./dashboard-agents.js');
  const { main, others } = dashboardAgents(
    agents.file,
    (id) => agentBuses.get(id) ?? bus,
    (id) => agents.configs.get(id) ?? options.config,
    options.logger,
  );
  const dashboard = await startDashboard({
    reader: main.reader,
    prefix: main.prefix,
    workspace: main.workspace,
    ...(main.name ? { name: main.name } : {}),
    ...(main.budget ? { budget: main.budget } : {}),
    agents: others,
    url: bus.url,
    logger: options.logger,
    port: options.config.dashboard.port,
    token: access.token,
    timezone: options.config.timezone,
    ...(options.config.prices ? { prices: options.config.prices } : {}),
    chat: createWebChatRouter({ bus, sessions, logger: options.logger }),
  });
  options.logger.info(
    { url: dashboard.url, signInWith: access.source },
    `dashboard at ${dashboard.url} (sign in with the token in ${access.source})`,
  );
  return { name: 'dashboard', close: () => dashboard.close() };
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Closes parts in reverse order of start; one failure does not stop the others. */
async function closeAll(parts: Part[], logger: Logger): Promise<void> {
  for (const part of [...parts].reverse()) {
    try {
      logger.debug({ part: part.name }, 'closing');
      await part.close();
    } catch (err) {
      logger.warn({ part: part.name, err: describeError(err) }, 'closing failed');
    }
  }
}

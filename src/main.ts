/**
 * The composition root. Builds every part from the Config and runs one role:
 * `start` (private Redis if needed + gateway + worker + scheduler),
 * `gateway` (channels and outbound delivery) or `worker` (turns and
 * schedules). Shuts down in order: intake → workers → queues → Redis.
 */
import { visionCapable } from './agent/model-vision.js';
import type { StateStore } from './agent/ports.js';
import type { AgentRunner } from './agent/types.js';
import { checkWorkspaceIdentity } from './app/workspace-check.js';
import { Bus } from './bus/bus.js';
import type { ConsumerTuning } from './bus/consumer.js';
import { type LocalRedis, startLocalRedis } from './bus/local-redis.js';
import { CliChannel } from './channels/cli/cli-channel.js';
import type { Channel, ChannelDeps } from './channels/types.js';
import { parseCommandArgs } from './cli/args.js';
import { type Config, environment, loadConfig, parseDuration, streamsTo } from './config/index.js';
import { secretValues } from './config/secrets.js';
import { OutboundDelivery } from './delivery/outbound-delivery.js';
import { ConfigError, describeError, ExitCode } from './errors/index.js';
import { createLogger, type Logger } from './log/index.js';
import { startMcp } from './mcp/start.js';
import type { SandboxStatus } from './tools/sandbox.js';
import { TurnWorker } from './worker/turn-worker.js';

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
export async function startRole(options: RoleOptions): Promise<RunningRole> {
  const { role, config, logger } = options;
  const parts: Part[] = [];
  // Where exec runs is settled before anything starts: MAGPIE_EXEC_SANDBOX=bwrap
  // without a working bwrap ends here (exit 2); auto without one warns.
  const execSandbox =
    role === 'gateway'
      ? undefined
      : await (await import('./app/build-agent.js')).resolveExecSandbox(config, logger);
  let local: LocalRedis | undefined;
  if (role === 'start' && !config.redis.url) {
    local = await startLocalRedis({ workspace: config.workspace, stateDir: config.stateDir, logger });
  }
  // Channels publish through a bus that fails fast when Redis is away; the
  // worker's bus waits for Redis to come back (a restart must not use up turn attempts).
  const buses: Bus[] = [];
  const closeBuses = async () => {
    for (const b of buses) await b.close();
    await local?.stop();
  };
  try {
    if (role !== 'worker') buses.push(await Bus.connect({ config, logger, url: local?.url }));
    if (role !== 'gateway') buses.push(await Bus.connect({ config, logger, url: local?.url, patient: true }));
    // A process whose workspace is not the bus's refuses here, before it takes any message.
    await checkWorkspaceIdentity({ bus: buses[0] as Bus, workspace: config.workspace, logger });
    // Gateway first, so closing (in reverse) stops the worker's intake and turns before delivery drains.
    if (role !== 'worker') parts.push(...(await startGateway(buses[0] as Bus, options)));
    if (role !== 'gateway')
      parts.push(...(await startWorker(buses[buses.length - 1] as Bus, { ...options, execSandbox })));
    if (role !== 'worker' && config.dashboard.port)
      parts.push(await startDashboardPart(buses[0] as Bus, options));
  } catch (err) {
    await closeAll(parts, logger);
    await closeBuses();
    throw err;
  }
  const bus = buses[0] as Bus;
  logger.info({ role, redis: local ? 'private' : 'REDIS_URL', prefix: bus.prefix }, 'magpie is running');
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

/**
 * Runs a role until SIGINT/SIGTERM, then shuts down cleanly and resolves 0.
 * A second signal exits at once.
 */
export async function runRole(options: RoleOptions): Promise<number> {
  const running = await startRole(options);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  options.logger.info({ signal }, 'shutting down: finishing running turns');
  const force = () => {
    options.logger.warn('second signal: exiting now');
    process.exit(1);
  };
  process.once('SIGINT', force);
  process.once('SIGTERM', force);
  await running.stop();
  return 0;
}

async function startWorker(
  bus: Bus,
  options: RoleOptions & { execSandbox?: SandboxStatus },
): Promise<Part[]> {
  const { config, logger } = options;
  const parts: Part[] = [];
  const state: StateStore = bus.stateStore();
  const { buildAgent } = await import('./app/build-agent.js');
  const scheduler = await import('./scheduler/index.js');
  const helpersModule = await import('./helpers/index.js');
  const helperQueue = new helpersModule.HelpersQueue(bus, logger);
  // MCP servers (mcp.json) start in parallel before the first turn; without the file nothing of MCP loads.
  // Their images are kept when any model sees; the provider puts a note in their place for one that does not.
  const mcp = await startMcp({
    config,
    logger,
    env: options.env ?? process.env,
    vision: config.llm.models.some((m) => visionCapable(m.model, config.vision)),
  });
  // Closed last of the worker's parts: after the turns and helpers that may still call their tools.
  if (mcp) parts.push({ name: 'mcp servers', close: () => mcp.close() });
  // One store of scheduled tasks for the cron tool and the heartbeat's schedule, closed after the turns using it.
  const cronStore = bus.cronStore();
  parts.push({ name: 'cron store', close: () => cronStore.close() });
  let built: Awaited<ReturnType<typeof buildAgent>>;
  try {
    built = await buildAgent({
      config,
      logger,
      outbound: { publish: (message) => bus.publishOutbound(message) },
      state,
      extraTools: [scheduler.createCronTool({ store: cronStore, config })],
      helperQueue,
      helperTracker: bus.helperTracker(),
      // Shared by every worker: a failing model rests for all of them; a chat's /model holds everywhere.
      cooldowns: bus.cooldownStore(),
      modelChoices: bus.modelChoiceStore(),
      ...(mcp ? { mcp } : {}),
      ...(options.execSandbox ? { execSandbox: options.execSandbox } : {}),
    });
  } catch (err) {
    await cronStore.close();
    await mcp?.close();
    throw err;
  }
  const agent: AgentRunner = built.agent;
  const worker = new TurnWorker({
    bus,
    agent,
    logger,
    concurrency: options.concurrency ?? config.redis.concurrency,
    timezone: config.timezone,
    streams: (channel) => streamsTo(config, channel),
    ...definedOnly(options.tuning ?? {}),
    shutdownTimeoutMs: options.shutdownTimeoutMs,
  });
  await worker.start();
  // `<prefix>:workers:<id>` with a TTL: status, doctor and the dashboard see this worker alive.
  const beat = bus.workerHeartbeat({
    id: worker.id,
    concurrency: options.concurrency ?? config.redis.concurrency,
    logger,
  });
  await beat.start();
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
  // The scheduler plugs in here: heartbeat and cron job schedulers (brief 8).
  const schedule = await scheduler.startScheduler({ config, bus, agent, state, logger, store: cronStore });
  // Closed in reverse: the scheduler (intake) first, then the turn worker, then the agent's background work.
  parts.push({ name: 'worker heartbeat', close: () => beat.close() });
  parts.push({ name: 'agent', close: () => built.agent.idle() });
  parts.push({ name: 'turn worker', close: () => worker.close() });
  parts.push({ name: 'helper worker', close: () => helperWorker.close() });
  parts.push({ name: 'scheduler', close: () => schedule.close() });
  return parts;
}

async function startGateway(bus: Bus, options: RoleOptions): Promise<Part[]> {
  const { config, logger } = options;
  const deps: ChannelDeps = { config, bus, logger, pairing: bus.pairingStore() };
  const channels: Channel[] = [new CliChannel({ bus, logger })];
  if (config.telegram.token) {
    const { createTelegramChannel } = await import('./channels/telegram/index.js');
    channels.push(createTelegramChannel(deps));
  }
  if (config.discord.token) {
    const { createDiscordChannel } = await import('./channels/discord/index.js');
    channels.push(createDiscordChannel(deps));
  }
  // The web chat's pages are served by this process's dashboard (startDashboardPart).
  if (config.dashboard.port) {
    const { WebChannel } = await import('./channels/web/web-channel.js');
    channels.push(new WebChannel({ bus, logger }));
  }
  const parts: Part[] = [];
  for (const channel of channels) {
    const live = streamsTo(config, channel.name);
    const delivery = await OutboundDelivery.start({ bus, channel, logger, live });
    await channel.start();
    // Closed in reverse: the channel stops after its queue has drained and its consumer closed.
    parts.push({ name: `${channel.name} channel`, close: () => channel.stop() });
    parts.push({
      name: `${channel.name} delivery`,
      close: async () => {
        await delivery.drained(10_000);
        await delivery.close();
      },
    });
  }
  return parts;
}

/** The dashboard inside `start`/`gateway` when MAGPIE_DASHBOARD_PORT is set; logs its URL and where its token is. */
async function startDashboardPart(bus: Bus, options: RoleOptions): Promise<Part> {
  const { startDashboard } = await import('./ops/dashboard-server.js');
  const { loadDashboardToken } = await import('./ops/dashboard-auth.js');
  const { createWebChatRouter } = await import('./channels/web/routes.js');
  const { JsonlSessionStore } = await import('./sessions/jsonl-store.js');
  const sessions = new JsonlSessionStore({
    dir: `${options.config.workspace}/sessions`,
    logger: options.logger,
  });
  const access = loadDashboardToken({
    configured: options.config.dashboard.token,
    stateDir: options.config.stateDir,
  });
  const dashboard = await startDashboard({
    reader: bus.opsReader,
    url: bus.url,
    prefix: bus.prefix,
    workspace: options.config.workspace,
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
      await part.close();
    } catch (err) {
      logger.warn({ part: part.name, err: describeError(err) }, 'closing failed');
    }
  }
}

const ROLE_FLAGS = {
  concurrency: { type: 'string' },
  'lock-duration': { type: 'string' },
  'stalled-interval': { type: 'string' },
  'shutdown-timeout': { type: 'string' },
  workspace: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The options every role command shares, for its `--help`. */
export const ROLE_OPTIONS_HELP = `options:
  --concurrency N        turns at once in this process (default MAGPIE_WORKER_CONCURRENCY, 16)
  --lock-duration D      turn job lock, renewed while a turn runs; a crashed turn is redone after it (default 30s)
  --stalled-interval D   how often crashed turns are looked for (default 15s)
  --shutdown-timeout D   how long SIGINT/SIGTERM waits for running turns (default 60s)
  --workspace DIR        overrides MAGPIE_WORKSPACE
  -h, --help             this help`;

/**
 * The body of `magpie start|gateway|worker`: parses the shared flags, loads
 * the config (the LLM key is needed where turns run) and runs the role.
 */
export async function runRoleCommand(role: Role, argv: string[], help: string): Promise<number> {
  const { values } = parseCommandArgs(role, argv, ROLE_FLAGS);
  if (values.help) {
    process.stdout.write(`${help}\n\n${ROLE_OPTIONS_HELP}\n`);
    return ExitCode.ok;
  }
  const overrides = { workspace: values.workspace || undefined };
  const config = loadConfig({ llm: role !== 'gateway', overrides });
  const logger = createLogger({
    level: config.log.level,
    pretty: config.log.pretty,
    secrets: secretValues(config),
  });
  const flagMs = (name: keyof typeof ROLE_FLAGS): number | undefined => {
    const text = values[name];
    if (typeof text !== 'string') return undefined;
    const ms = parseDuration(text);
    if (ms === undefined || ms <= 0)
      throw new ConfigError(`magpie ${role}: --${name} "${text}" is not a duration (e.g. 30s)`);
    return ms;
  };
  let concurrency: number | undefined;
  if (values.concurrency !== undefined) {
    concurrency = Number(values.concurrency);
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new ConfigError(
        `magpie ${role}: --concurrency "${values.concurrency}" is not a positive whole number`,
      );
    }
  }
  return runRole({
    role,
    config,
    logger,
    concurrency,
    env: environment(overrides),
    shutdownTimeoutMs: flagMs('shutdown-timeout'),
    tuning: { lockDurationMs: flagMs('lock-duration'), stalledIntervalMs: flagMs('stalled-interval') },
  });
}

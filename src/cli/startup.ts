/**
 * The start-up path every command shares: flags → `loadConfig({ overrides })`
 * → logger → bus. Commands never write `process.env`; `--workspace` reaches
 * the config as an override.
 */
// Types only: the bus (bullmq, ioredis) and the CLI client load when a command connects, so
// `magpie agent`, which never talks to Redis, does not pay for them at start-up.

import { loadConfig } from '../app/config.js';
import type { Bus } from '../bus/bus.js';
import { type Config, type ConfigNeeds, type ConfigOverrides, environment } from '../config/index.js';
import { secretValues } from '../config/secrets.js';
import { createLogger, type Logger, silentLogger } from '../log/index.js';
import type { Tracing } from '../telemetry/tracing.js';
import type { ShedOutcome } from './shed-secrets.js';

/** The flags every command that reads the config may take. */
export interface StartupFlags {
  /** `--workspace DIR`; empty or absent leaves MAGPIE_WORKSPACE in charge. */
  workspace?: string | undefined;
}

/** `--workspace DIR`, the flag behind {@link StartupFlags}, for a command's `flags`. */
export const WORKSPACE_FLAG = { workspace: { type: 'string' } } as const;

/**
 * How loud a command's log is:
 * - `configured`: LOG_LEVEL (servers: start, gateway, worker, dashboard);
 * - `quiet`: warnings only unless LOG_LEVEL is set (cron, memory, agent: stdout holds their output);
 * - `client`: warnings only unless LOG_LEVEL is debug or trace (send, chat);
 * - `silent`: nothing (status, which prints a report).
 */
export type CommandLogLevel = 'configured' | 'quiet' | 'client' | 'silent';

/**
 * The config of a command: `.env`, the environment, then its flags on top.
 *
 * @example const config = commandConfig(values, { llm: true });
 */
export function commandConfig(flags: StartupFlags, needs: ConfigNeeds = {}): Config {
  return loadConfig({ ...needs, overrides: overrides(flags) });
}

/**
 * The environment a command's config came from (flags on top), for `${VAR}`
 * in mcp.json. Call after {@link commandConfig}, which reads `.env`.
 */
export function commandEnv(flags: StartupFlags): NodeJS.ProcessEnv {
  return environment(overrides(flags));
}

function overrides(flags: StartupFlags): ConfigOverrides {
  return { workspace: flags.workspace || undefined };
}

/**
 * Says what became of secrets found in the environment at start
 * (shed-secrets.ts): nothing when there were none or they were blanked or handed over,
 * a warning when this process could not re-execute without them.
 */
export function reportShed(outcome: ShedOutcome, logger: Logger): void {
  if (outcome.kind === 'received' || outcome.kind === 'scrubbed') {
    logger.debug(
      { variables: outcome.names, how: outcome.kind },
      'secrets moved out of the process environment',
    );
  } else if (outcome.kind === 'kept') {
    logger.warn(
      { variables: outcome.names },
      `secrets could not be moved out of /proc/${process.pid}/environ (${outcome.reason}): child processes do not get them, but other processes of this user can read them there; put them in .env instead`,
    );
  }
}

/** The root logger of a command, scrubbing the config's secrets. */
export function commandLogger(config: Config, level: CommandLogLevel): Logger {
  if (level === 'silent') return silentLogger();
  return createLogger({
    level: logLevel(config, level),
    pretty: config.log.pretty,
    secrets: secretValues(config),
  });
}

/** The level a command logs at (see {@link CommandLogLevel}). */
export function logLevel(config: Config, level: Exclude<CommandLogLevel, 'silent'>): string {
  const configured = config.log.level;
  if (level === 'quiet') return config.log.explicit ? configured : 'warn';
  if (level === 'client') return clientLevel(configured);
  return configured;
}

/**
 * The log level of a CLI client: quiet (`warn`) so stdout stays for replies,
 * unless LOG_LEVEL asks for more detail (debug, trace).
 */
function clientLevel(configured: string): string {
  return configured === 'debug' || configured === 'trace' ? configured : 'warn';
}

/** Config, logger and a connected bus: what a command that talks to Redis starts with. */
export interface CommandContext {
  config: Config;
  logger: Logger;
  bus: Bus;
  /** The command's tracing, when it asked for it ({@link CommandOptions}); shut down after the bus. */
  tracing?: Tracing;
}

/**
 * The whole start-up path for a command that talks to the bus. The caller
 * closes `bus` when done.
 *
 * @example
 * const { config, bus } = await startCommand(values, 'client');
 * try { … } finally { await bus.close(); }
 */
export async function startCommand(
  flags: StartupFlags,
  level: CommandLogLevel,
  options: CommandOptions = {},
): Promise<CommandContext> {
  const config = commandConfig(flags);
  const logger = commandLogger(config, level);
  const { Bus } = await import('../bus/bus.js');
  if (!options.traced) return { config, logger, bus: await Bus.connect({ config, logger }) };
  // A message published here starts its trace here (the receipt), as a channel's would in the
  // gateway; with the OTEL_* variables unset nothing of OpenTelemetry is loaded.
  const { startTracing } = await import('../telemetry/start-tracing.js');
  const tracing = await startTracing({ config: config.tracing, service: 'magpie-cli', logger });
  try {
    return { config, logger, bus: await Bus.connect({ config, logger, tracing }), tracing };
  } catch (err) {
    await tracing.shutdown();
    throw err;
  }
}

export interface CommandOptions {
  /** Traces what the command publishes (`magpie send`, `magpie chat`). @defaultValue false */
  traced?: boolean;
}

/**
 * Runs `work` with a started command ({@link startCommand}) and closes its bus
 * afterwards, whether `work` returned or threw.
 *
 * @example
 * return withBus(values, 'silent', async ({ bus }) => report(await collect(bus)));
 */
export async function withBus<T>(
  flags: StartupFlags,
  level: CommandLogLevel,
  work: (context: CommandContext) => Promise<T>,
  options: CommandOptions = {},
): Promise<T> {
  const context = await startCommand(flags, level, options);
  try {
    return await work(context);
  } finally {
    await context.bus.close();
    await context.tracing?.shutdown();
  }
}

/**
 * The body of `magpie start|gateway|worker`: their shared flags, then the one
 * start-up path (startup.ts: flags → `loadConfig({ overrides })` → logger),
 * then the role runner the entry injected (src/main.ts builds and runs the role).
 */
import type { Role, RoleOptions } from '../app/roles.js';
import { parseDuration } from '../config/index.js';
import { ConfigError, ExitCode } from '../errors/index.js';
import { parseCommandArgs } from './args.js';
import { shedSecretEnvironment } from './shed-secrets.js';
import { commandConfig, commandEnv, commandLogger, reportShed, WORKSPACE_FLAG } from './startup.js';

/** Builds a role from its Config and runs it until a signal; resolves with the exit code. */
export type RunRole = (options: RoleOptions) => Promise<number>;

const ROLE_FLAGS = {
  concurrency: { type: 'string' },
  'lock-duration': { type: 'string' },
  'stalled-interval': { type: 'string' },
  'shutdown-timeout': { type: 'string' },
  agent: { type: 'string' },
  ...WORKSPACE_FLAG,
  help: { type: 'boolean', short: 'h' },
} as const;

/** The options every role command shares, for its `--help`. */
export const ROLE_OPTIONS_HELP = `options:
  --concurrency N        turns at once in this process (default MAGPIE_WORKER_CONCURRENCY, 16)
  --lock-duration D      turn job lock, renewed while a turn runs; a crashed turn is redone after it (default 30s)
  --stalled-interval D   how often crashed turns are looked for (default 15s)
  --shutdown-timeout D   how long SIGINT/SIGTERM waits for running turns (default 60s)
  --workspace DIR        overrides MAGPIE_WORKSPACE
  --agent ID             (worker) take the turns of this agent of agents.json only (default: every agent)
  -h, --help             this help`;

type RoleValues = ReturnType<typeof parseCommandArgs<typeof ROLE_FLAGS>>['values'];

/**
 * Parses the shared flags, loads the config (the LLM key is needed where
 * turns run) and hands the role to `runRole`.
 *
 * @example export const run = (argv, runRole) => runRoleCommand('worker', argv, HELP, runRole);
 */
export async function runRoleCommand(
  role: Role,
  argv: string[],
  help: string,
  runRole: RunRole,
): Promise<number> {
  const { values } = parseCommandArgs(role, argv, ROLE_FLAGS);
  if (values.help) {
    process.stdout.write(`${help}\n\n${ROLE_OPTIONS_HELP}\n`);
    return ExitCode.ok;
  }
  // Secrets in the environment: re-executes without them (returns in the new process).
  const shed = shedSecretEnvironment();
  const config = commandConfig(values, { llm: role !== 'gateway' });
  const logger = commandLogger(config, 'configured');
  reportShed(shed, logger);
  const flagMs = (name: 'lock-duration' | 'stalled-interval' | 'shutdown-timeout') =>
    durationFlag(role, values, name);
  if (values.agent !== undefined && role !== 'worker')
    throw new ConfigError(
      `magpie ${role}: --agent is for magpie worker (a gateway and start serve every agent)`,
    );
  return runRole({
    role,
    config,
    logger,
    concurrency: concurrencyFlag(role, values),
    env: commandEnv(values),
    ...(values.agent !== undefined ? { agent: values.agent } : {}),
    shutdownTimeoutMs: flagMs('shutdown-timeout'),
    tuning: { lockDurationMs: flagMs('lock-duration'), stalledIntervalMs: flagMs('stalled-interval') },
  });
}

/** A duration flag in ms; absent → undefined. @throws ConfigError for text that is not a positive duration. */
function durationFlag(role: Role, values: RoleValues, name: keyof RoleValues): number | undefined {
  const text = values[name];
  if (typeof text !== 'string') return undefined;
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0)
    throw new ConfigError(`magpie ${role}: --${name} "${text}" is not a duration (e.g. 30s)`);
  return ms;
}

/** `--concurrency N`; absent → undefined. @throws ConfigError unless a positive whole number. */
function concurrencyFlag(role: Role, values: RoleValues): number | undefined {
  if (values.concurrency === undefined) return undefined;
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new ConfigError(
      `magpie ${role}: --concurrency "${values.concurrency}" is not a positive whole number`,
    );
  }
  return concurrency;
}

/**
 * The only reader of process.env: a zod schema for the environment, turned into
 * one frozen Config. A bad value becomes a ConfigError naming the variable and the fix.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseEnv } from 'node:util';
import { z } from 'zod';
import { ConfigError } from '../errors/index.js';
import { type BudgetConfig, modelPricesSchema, moneyLimitSchema, tokenLimitSchema } from './budget.js';
import {
  type AnyChannelSlice,
  type ChannelSettingsMap,
  channelEnvShape,
  channelSecrets,
  channelSettings,
  streamSwitches,
} from './channel-slices.js';
import {
  activeHours,
  boolean,
  byteSize,
  duration,
  endpointUrl,
  optionalPositive,
  optionalSwitch,
  optionalText,
  optionalUrl,
  positiveInt,
  timeZone,
} from './env-values.js';
import { type ModelEndpointConfig, parseModelEntry, parseModels } from './fallback-models.js';
import { REDIS_ENV, type RedisConfig, redisConfig } from './redis-settings.js';
import {
  APPROVAL_ENV,
  type ApprovalConfig,
  approvalConfig,
  type ExecSandboxMode,
  isWithin,
  SANDBOX_ENV,
  type SandboxConfig,
  settleSandbox,
} from './sandbox-settings.js';
import { heldSecrets } from './secret-env.js';
import { TRACING_ENV, type TracingConfig, tracingConfig } from './tracing.js';
import { type PriceConfig, priceSchema, pricesFrom, promptCacheSchema } from './usage.js';
import { VOICE_ENV, type VoiceConfig, voiceConfig } from './voice.js';

/** The web search backends, in the order one is picked when MAGPIE_WEB_SEARCH is unset. */
export const SEARCH_BACKENDS = ['brave', 'tavily', 'searxng'] as const;
export type SearchBackendName = (typeof SEARCH_BACKENDS)[number];

/** The environment schema. Every variable is listed with its default in `.env.example`. */
/** The environment's variables before the channels' (see {@link envSchema}). */
const CORE_ENV_HEAD = {
  OPENAI_API_KEY: optionalText,
  OPENAI_BASE_URL: endpointUrl('https://api.openai.com/v1'),
  MAGPIE_MODEL: z.string().min(1).default('gpt-4o-mini'),
  MAGPIE_FALLBACK_MODELS: optionalText,
  MAGPIE_FALLBACK_COOLDOWN: duration('30s', { maxMs: 600_000 }),
  MAGPIE_WORKSPACE: z.string().min(1).default('./workspace'),
  MAGPIE_STATE_DIR: optionalText,
  MAGPIE_MAX_ITERATIONS: positiveInt(20),
  MAGPIE_LLM_TIMEOUT: duration('120s'),
  MAGPIE_LLM_MAX_RETRIES: z
    .string()
    .default('2')
    .transform((v, ctx) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0 || n > 10) {
        ctx.addIssue({ code: 'custom', message: `"${v}" must be a whole number from 0 to 10` });
        return z.NEVER;
      }
      return n;
    }),
  MAGPIE_CONTEXT_TOKENS: optionalPositive(),
  MAGPIE_TRANSCRIBE_MODEL: optionalText,
  MAGPIE_EMBEDDING_MODEL: optionalText,
  ...VOICE_ENV,
  MAGPIE_PROMPT_CACHE: promptCacheSchema,
  MAGPIE_PRICE_INPUT: priceSchema,
  MAGPIE_PRICE_CACHED_INPUT: priceSchema,
  MAGPIE_PRICE_OUTPUT: priceSchema,
  MAGPIE_PRICES: modelPricesSchema,
  MAGPIE_BUDGET_DAILY: moneyLimitSchema,
  MAGPIE_BUDGET_MONTHLY: moneyLimitSchema,
  MAGPIE_BUDGET_CHAT_DAILY: moneyLimitSchema,
  MAGPIE_BUDGET_DAILY_TOKENS: tokenLimitSchema,
  MAGPIE_MAX_CALLS_PER_MINUTE: positiveInt(30),
  MAGPIE_EXEC_TIMEOUT: duration('60s'),
  MAGPIE_TOOL_TIMEOUT: duration('120s'),
  ...APPROVAL_ENV,
  ...SANDBOX_ENV,
  MAGPIE_EXEC_NETWORK: boolean,
  MAGPIE_EXEC_USER: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? 'nobody' : v.trim())),
  MAGPIE_EXEC_BWRAP: optionalText,
  MAGPIE_EXEC_MEMORY: byteSize('1GiB'),
  MAGPIE_EXEC_MAX_WRITE: byteSize('256MiB'),
  MAGPIE_WORKSPACE_MAX_BYTES: byteSize('1GiB'),
  MAGPIE_WEB_ALLOW_PRIVATE: boolean,
  MAGPIE_MAX_MEDIA_BYTES: positiveInt(20 * 1024 * 1024),
  ...REDIS_ENV,
  MAGPIE_QUEUE_PREFIX: z
    .string()
    .default('magpie')
    .refine((v) => /^[A-Za-z0-9_-]+$/.test(v), { message: 'may hold only letters, digits, _ and -' }),
  MAGPIE_WORKER_CONCURRENCY: positiveInt(16),
  MAGPIE_STREAM: optionalSwitch,
};

/** The environment's variables after the channels'. */
const CORE_ENV_TAIL = {
  MAGPIE_HEARTBEAT_INTERVAL: duration('30m', { allowZero: true }),
  MAGPIE_HEARTBEAT_ACTIVE_HOURS: activeHours,
  MAGPIE_MEMORY_CONSOLIDATE: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const t = v?.trim() ?? '';
      if (t === '') return undefined;
      if (!/^([01]\d|2[0-3]):[0-5]\d$/.test(t)) {
        ctx.addIssue({
          code: 'custom',
          message: `"${t}" must be a time of day HH:MM (e.g. 03:30), or empty for off`,
        });
        return z.NEVER;
      }
      return t;
    }),
  MAGPIE_MEMORY_MAX_CHARS: positiveInt(12_000),
  MAGPIE_CRON_MAX_PER_CHAT: positiveInt(50),
  MAGPIE_CRON_MAX_AGENT_PER_CHAT: positiveInt(5),
  MAGPIE_CRON_MIN_INTERVAL: duration('15m'),
  MAGPIE_TIMEZONE: timeZone,
  MAGPIE_BACKUP_SCHEDULE: optionalText.refine((v) => v === undefined || /^([01]\d|2[0-3]):[0-5]\d$/.test(v), {
    message: 'must be a time of day HH:MM (24-hour), e.g. 03:30',
  }),
  MAGPIE_BACKUP_KEEP: positiveInt(7),
  MAGPIE_BACKUP_DIR: optionalText,
  MAGPIE_BACKUP_PASSPHRASE: optionalText,
  MAGPIE_MCP_CONFIG: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? './mcp.json' : v.trim())),
  MAGPIE_MCP_TIMEOUT: duration('60s'),
  MAGPIE_AGENTS_CONFIG: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? './agents.json' : v.trim())),
  MAGPIE_WEB_SEARCH: optionalText.refine(
    (v) => v === undefined || (SEARCH_BACKENDS as readonly string[]).includes(v) || v === 'off',
    { message: `must be one of ${SEARCH_BACKENDS.join(', ')} or off` },
  ),
  BRAVE_API_KEY: optionalText,
  BRAVE_API_ROOT: optionalUrl().transform((v) => v ?? 'https://api.search.brave.com'),
  TAVILY_API_KEY: optionalText,
  TAVILY_API_ROOT: optionalUrl().transform((v) => v ?? 'https://api.tavily.com'),
  SEARXNG_URL: optionalUrl(),
  MAGPIE_VISION: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const text = (v ?? '').trim().toLowerCase();
      if (text === '' || text === 'auto') return 'auto' as const;
      if (/^(1|true|yes|on)$/.test(text)) return true;
      if (/^(0|false|no|off)$/.test(text)) return false;
      ctx.addIssue({ code: 'custom', message: `"${v}" must be auto, true or false` });
      return z.NEVER;
    }),
  MAGPIE_DASHBOARD_PORT: optionalPositive(65535),
  MAGPIE_DASHBOARD_TOKEN: optionalText,
  MAGPIE_WEBHOOK_PORT: optionalPositive(65535),
  MAGPIE_WEBHOOK_HOST: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? '127.0.0.1' : v.trim()))
    .refine((v) => /^[A-Za-z0-9.:-]+$/.test(v), {
      message: 'must be an address to listen on, e.g. 127.0.0.1 (behind a reverse proxy) or 0.0.0.0',
    }),
  ...TRACING_ENV,
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  NODE_ENV: z.string().default('development'),
};

const CoreEnvSchema = z.object({ ...CORE_ENV_HEAD, ...CORE_ENV_TAIL });
/** The validated environment: the core variables, and each channel's (read by its slice). */
type Env = z.infer<typeof CoreEnvSchema> & Record<string, unknown>;

const schemas = new WeakMap<readonly AnyChannelSlice[], z.ZodObject>();

/**
 * The environment schema: magpie's variables with the given channels' variables
 * (each channel's slice, in registry order, after MAGPIE_STREAM). Every variable
 * is listed with its default in `.env.example`.
 */
export function envSchema(channels: readonly AnyChannelSlice[]): z.ZodObject {
  let schema = schemas.get(channels);
  if (!schema) {
    schema = z.object({ ...CORE_ENV_HEAD, ...channelEnvShape(channels), ...CORE_ENV_TAIL });
    schemas.set(channels, schema);
  }
  return schema;
}

/** The validated, frozen configuration every part receives. */
export interface Config {
  llm: {
    apiKey: string | undefined;
    baseURL: string;
    model: string;
    timeoutMs: number;
    maxRetries: number;
    contextTokens: number | undefined;
    transcribeModel: string | undefined;
    /** Prompt-cache hints: `auto` where the endpoint takes them, `off` never. */
    promptCache: 'auto' | 'off';
    /**
     * Every model a turn may use, in fallback order: MAGPIE_MODEL on OPENAI_BASE_URL first,
     * then MAGPIE_FALLBACK_MODELS (see config/fallback-models.ts).
     */
    models: readonly ModelEndpointConfig[];
    /** How long a failed model first rests; doubles while it keeps failing, at most 10 min. */
    cooldownMs: number;
    /**
     * MAGPIE_EMBEDDING_MODEL (`model`, `model@url`, `model@url#KEY_VAR`, read like a fallback entry):
     * the model whose `/v1/embeddings` gives memory search its vectors; unset: keyword search only.
     */
    embedding: ModelEndpointConfig | undefined;
  };
  /** Prices per million tokens (MAGPIE_PRICE_*): costs are estimated when set. */
  prices: PriceConfig | undefined;
  /** Spoken replies (MAGPIE_TTS*, config/voice.ts). */
  voice: VoiceConfig;
  /** Spending limits, the per-minute guard and per-model prices (see config/budget.ts). */
  budget: BudgetConfig;
  /** Absolute path of the workspace folder. */
  workspace: string;
  /**
   * Absolute path of magpie's own data (private Redis and its password, indexes):
   * outside the workspace, never visible to the tools.
   */
  stateDir: string;
  agent: {
    maxIterations: number;
    /** Which assistant this is (agents.json; `main` without it). */
    id: string;
    /** Its display name, when agents.json gives one. */
    name?: string;
    /** The agents its ask_agent tool may ask (agents.json `canAsk`). */
    canAsk: readonly string[];
  };
  /** agents.json (MAGPIE_AGENTS_CONFIG), absolute; it may not exist (then one agent, `main`). */
  agentsFile: string;
  /** The tools this agent may use (agents.json `tools.allow`/`deny`); unset: all. */
  toolFilter?: { allow?: readonly string[]; deny?: readonly string[] };
  tools: {
    execTimeoutMs: number;
    /** Time limit of a tool call for tools without their own (exec: its timeout plus a grace; subagent: 30 min). */
    timeoutMs: number;
    webAllowPrivate: boolean;
    /**
     * Where exec runs: `auto` (bubblewrap when it works, else exec disabled), `bwrap` (the
     * sandbox or no start), `off` (no sandbox: MAGPIE_EXEC_SANDBOX=off or MAGPIE_SANDBOX_MODE=full-access).
     */
    execSandbox: ExecSandboxMode;
    /** Whether sandboxed commands share the host's network. */
    execNetwork: boolean;
    /** The unprivileged host user (name or uid) sandboxed commands run as when magpie runs as root. */
    execUser: string;
    /** MAGPIE_EXEC_BWRAP: the bubblewrap program (absolute path); unset: `bwrap` from the usual folders and PATH. */
    bwrapPath: string | undefined;
    /** Memory of one sandboxed command, in bytes (cgroup memory.max, else RLIMIT_AS). */
    execMemoryBytes: number;
    /** Largest file one sandboxed command may write, in bytes (RLIMIT_FSIZE). */
    execMaxWriteBytes: number;
    /** The workspace's total size while a sandboxed command runs: past it the command is stopped. */
    workspaceMaxBytes: number;
  };
  /**
   * What the model's tools may change (MAGPIE_SANDBOX_MODE, MAGPIE_WRITABLE_ROOTS): `read-only`
   * refuses the file tools' writes and binds the workspace read-only in exec's sandbox;
   * `workspace-write` (the default) lets them change the workspace, and exec also the writable
   * roots; `full-access` is exec without a sandbox (the same as MAGPIE_EXEC_SANDBOX=off).
   */
  sandbox: SandboxConfig;
  /** Which tool calls wait for the owner's approval (MAGPIE_APPROVAL, MAGPIE_APPROVAL_TIMEOUT, MAGPIE_APPROVAL_UNATTENDED). */
  approval: ApprovalConfig;
  /**
   * Whether the model takes images (tool results' images are attached, not described).
   * 'auto': judged from the model's name (agent/model-vision.ts).
   */
  vision: boolean | 'auto';
  /** MCP servers: the absolute path of mcp.json (it may not exist: then no MCP) and the per-call time limit. */
  mcp: { configFile: string; timeoutMs: number };
  /** web_search: the backend in use (undefined: no web_search tool) and every backend's settings. */
  search: {
    backend: SearchBackendName | undefined;
    brave: { apiKey: string | undefined; apiRoot: string };
    tavily: { apiKey: string | undefined; apiRoot: string };
    searxng: { url: string | undefined };
  };
  media: { maxBytes: number };
  /** The bus's Redis (config/redis-settings.ts). */
  redis: RedisConfig;
  /** Each registered channel's settings under its name (`config.channels.<name>`, typed by its descriptor). */
  channels: ChannelSettingsMap;
  /** The channels' secret values (each descriptor names its own), for {@link secretValues}. */
  channelSecrets: readonly string[];
  heartbeat: { intervalMs: number; activeHours: string | undefined };
  /**
   * Backups (src/backup): the daily time of scheduled ones (HH:MM in `timezone`,
   * undefined: none), how many are kept, their folder (`<stateDir>/backups` by
   * default) and the passphrase of `--with-secrets` (a secret).
   */
  backup: {
    schedule: { hour: number; minute: number } | undefined;
    keep: number;
    dir: string;
    passphrase: string | undefined;
  };
  /**
   * Memory consolidation: the time of day it runs (MAGPIE_MEMORY_CONSOLIDATE, HH:MM in
   * `timezone`; undefined = off) and MEMORY.md's size cap (MAGPIE_MEMORY_MAX_CHARS, 12000).
   */
  memory: { consolidateAt: string | undefined; maxChars: number };
  /**
   * The cron tool's limits per chat: tasks of any kind (MAGPIE_CRON_MAX_PER_CHAT, 50), agent-mode
   * tasks (MAGPIE_CRON_MAX_AGENT_PER_CHAT, 5), and the shortest time between two runs of an
   * agent-mode task (MAGPIE_CRON_MIN_INTERVAL, 15m; reminders are not limited by it).
   */
  cron: { maxPerChat: number; maxAgentPerChat: number; minAgentIntervalMs: number };
  /**
   * Live replies (answers shown while they are written): MAGPIE_STREAM for every channel (on
   * unless off), `<CHANNEL>_STREAM` per channel over it. Read with {@link streamsTo}.
   */
  stream: { enabled: boolean; channels: Readonly<Record<string, boolean>> };
  timezone: string;
  dashboard: { port: number | undefined; token: string | undefined };
  /**
   * The gateway's webhook listener (MAGPIE_WEBHOOK_PORT, MAGPIE_WEBHOOK_HOST, default 127.0.0.1):
   * its own HTTP server, apart from the dashboard, where webhook channels (WhatsApp) mount their
   * routes. Off without a port.
   */
  webhook: { port: number | undefined; host: string };
  /**
   * LOG_LEVEL (default info); `explicit` says it was set, so commands that log
   * only warnings by default (cron, memory, agent) follow it only then.
   */
  log: { level: Env['LOG_LEVEL']; pretty: boolean; explicit: boolean };
  /** OpenTelemetry traces (the standard OTEL_* variables); undefined: off, and nothing of it is loaded. */
  tracing: TracingConfig | undefined;
}

/** What a command needs beyond the always-validated basics. */
export interface ConfigNeeds {
  /** The command calls the LLM, so OPENAI_API_KEY must be set. */
  llm?: boolean;
}

/**
 * Validates `env` into a Config with the given channels' slices (the registry's
 * descriptors; src/app/config.ts binds them). Throws ConfigError with one line
 * naming the variable and the fix.
 */
export function parseConfigWith(
  channels: readonly AnyChannelSlice[],
  env: NodeJS.ProcessEnv,
  needs: ConfigNeeds = {},
): Config {
  const e = validateEnv(envSchema(channels), env);
  requireNeeds(e, needs);
  const config = buildConfig(e, env, needs, channels);
  checkStateDirOutsideWorkspace(config);
  checkWebhookPort(config);
  return deepFreeze(config);
}

/** The environment through the schema; the first problem as one line naming the variable. */
function validateEnv(schema: z.ZodObject, env: NodeJS.ProcessEnv): Env {
  // Parsed once per process: zod's compiled fast path (new Function per object schema) costs more than it saves.
  const result = schema.safeParse(env, { jitless: true });
  if (result.success) return result.data as Env;
  const issue = result.error.issues[0]!;
  const name = String(issue.path[0] ?? 'environment');
  throw new ConfigError(
    `${name} ${issue.message.replace(/^Invalid input: /, '')}: fix it in .env (see .env.example)`,
  );
}

/** What the command needs beyond the basics: OPENAI_API_KEY for one that calls the LLM. */
function requireNeeds(e: Env, needs: ConfigNeeds): void {
  if (needs.llm && !e.OPENAI_API_KEY) {
    throw new ConfigError(
      'OPENAI_API_KEY is not set: put your key in .env (for a local server that needs none, any value such as "none")',
    );
  }
}

/** The Config from the validated variables (the channels' settings from their descriptors). */
function buildConfig(
  e: Env,
  env: NodeJS.ProcessEnv,
  needs: ConfigNeeds,
  channels: readonly AnyChannelSlice[],
): Config {
  const workspace = path.resolve(e.MAGPIE_WORKSPACE);
  const stateDir = e.MAGPIE_STATE_DIR ? path.resolve(e.MAGPIE_STATE_DIR) : defaultStateDir(workspace, env);
  const mcpConfigFile = path.resolve(e.MAGPIE_MCP_CONFIG);
  const settings = channelSettings(channels, e);
  const { execSandbox, sandbox } = settleSandbox(
    { mode: e.MAGPIE_SANDBOX_MODE, execSandbox: e.MAGPIE_EXEC_SANDBOX, roots: e.MAGPIE_WRITABLE_ROOTS },
    {
      workspace,
      stateDir,
      files: [
        { name: 'mcp.json', path: mcpConfigFile },
        { name: '.env', path: path.resolve('.env') },
      ],
    },
  );
  return {
    llm: llmConfig(e, env, needs),
    prices: pricesFrom(e),
    voice: voiceConfig(
      e,
      { model: e.MAGPIE_MODEL, baseURL: e.OPENAI_BASE_URL, apiKey: e.OPENAI_API_KEY },
      env,
      needs.llm === true,
    ),
    budget: {
      daily: e.MAGPIE_BUDGET_DAILY,
      monthly: e.MAGPIE_BUDGET_MONTHLY,
      chatDaily: e.MAGPIE_BUDGET_CHAT_DAILY,
      dailyTokens: e.MAGPIE_BUDGET_DAILY_TOKENS,
      maxCallsPerMinute: e.MAGPIE_MAX_CALLS_PER_MINUTE,
      prices: e.MAGPIE_PRICES,
      fallbackPrices: pricesFrom(e),
    },
    workspace,
    stateDir,
    agent: { maxIterations: e.MAGPIE_MAX_ITERATIONS, id: 'main', canAsk: [] },
    agentsFile: path.resolve(e.MAGPIE_AGENTS_CONFIG),
    tools: {
      execTimeoutMs: e.MAGPIE_EXEC_TIMEOUT,
      timeoutMs: e.MAGPIE_TOOL_TIMEOUT,
      webAllowPrivate: e.MAGPIE_WEB_ALLOW_PRIVATE,
      execSandbox,
      execNetwork: e.MAGPIE_EXEC_NETWORK,
      execUser: e.MAGPIE_EXEC_USER,
      bwrapPath: e.MAGPIE_EXEC_BWRAP ? path.resolve(e.MAGPIE_EXEC_BWRAP) : undefined,
      execMemoryBytes: e.MAGPIE_EXEC_MEMORY,
      execMaxWriteBytes: e.MAGPIE_EXEC_MAX_WRITE,
      workspaceMaxBytes: e.MAGPIE_WORKSPACE_MAX_BYTES,
    },
    sandbox,
    approval: approvalConfig(e),
    vision: e.MAGPIE_VISION,
    mcp: { configFile: mcpConfigFile, timeoutMs: e.MAGPIE_MCP_TIMEOUT },
    search: searchConfig(e),
    media: { maxBytes: e.MAGPIE_MAX_MEDIA_BYTES },
    redis: redisConfig(e, {
      prefix: e.MAGPIE_QUEUE_PREFIX,
      concurrency: e.MAGPIE_WORKER_CONCURRENCY,
      workspace,
    }),
    channels: settings,
    channelSecrets: channelSecrets(channels, settings),
    heartbeat: { intervalMs: e.MAGPIE_HEARTBEAT_INTERVAL, activeHours: e.MAGPIE_HEARTBEAT_ACTIVE_HOURS },
    backup: {
      schedule: e.MAGPIE_BACKUP_SCHEDULE
        ? {
            hour: Number(e.MAGPIE_BACKUP_SCHEDULE.slice(0, 2)),
            minute: Number(e.MAGPIE_BACKUP_SCHEDULE.slice(3)),
          }
        : undefined,
      keep: e.MAGPIE_BACKUP_KEEP,
      dir: e.MAGPIE_BACKUP_DIR ? path.resolve(e.MAGPIE_BACKUP_DIR) : path.join(stateDir, 'backups'),
      passphrase: e.MAGPIE_BACKUP_PASSPHRASE,
    },
    memory: { consolidateAt: e.MAGPIE_MEMORY_CONSOLIDATE, maxChars: e.MAGPIE_MEMORY_MAX_CHARS },
    cron: {
      maxPerChat: e.MAGPIE_CRON_MAX_PER_CHAT,
      maxAgentPerChat: e.MAGPIE_CRON_MAX_AGENT_PER_CHAT,
      minAgentIntervalMs: e.MAGPIE_CRON_MIN_INTERVAL,
    },
    stream: { enabled: e.MAGPIE_STREAM ?? true, channels: streamSwitches(channels, e) },
    timezone: e.MAGPIE_TIMEZONE,
    dashboard: { port: e.MAGPIE_DASHBOARD_PORT, token: e.MAGPIE_DASHBOARD_TOKEN },
    webhook: { port: e.MAGPIE_WEBHOOK_PORT, host: e.MAGPIE_WEBHOOK_HOST },
    log: {
      level: e.LOG_LEVEL,
      pretty: e.NODE_ENV !== 'production' && Boolean(process.stderr.isTTY),
      explicit: Boolean(env.LOG_LEVEL),
    },
    tracing: tracingConfig(e),
  };
}

/** The model endpoint, the model and its fallbacks. */
function llmConfig(e: Env, env: NodeJS.ProcessEnv, needs: ConfigNeeds): Config['llm'] {
  return {
    apiKey: e.OPENAI_API_KEY,
    baseURL: e.OPENAI_BASE_URL,
    model: e.MAGPIE_MODEL,
    timeoutMs: e.MAGPIE_LLM_TIMEOUT,
    maxRetries: e.MAGPIE_LLM_MAX_RETRIES,
    contextTokens: e.MAGPIE_CONTEXT_TOKENS,
    transcribeModel: e.MAGPIE_TRANSCRIBE_MODEL,
    promptCache: e.MAGPIE_PROMPT_CACHE,
    models: parseModels(
      e.MAGPIE_FALLBACK_MODELS,
      { model: e.MAGPIE_MODEL, baseURL: e.OPENAI_BASE_URL, apiKey: e.OPENAI_API_KEY },
      env,
      needs.llm === true,
    ),
    cooldownMs: e.MAGPIE_FALLBACK_COOLDOWN,
    embedding: embeddingModel(e, env, needs),
  };
}

/** MAGPIE_EMBEDDING_MODEL as one model entry (its id is its name), or undefined when unset. */
function embeddingModel(e: Env, env: NodeJS.ProcessEnv, needs: ConfigNeeds): ModelEndpointConfig | undefined {
  const text = e.MAGPIE_EMBEDDING_MODEL;
  if (text === undefined) return undefined;
  const primary = { model: e.MAGPIE_MODEL, baseURL: e.OPENAI_BASE_URL, apiKey: e.OPENAI_API_KEY };
  const entry = parseModelEntry(text, primary, env, needs.llm === true, 'MAGPIE_EMBEDDING_MODEL');
  return { id: entry.model, ...entry };
}

/** The web search backend in use and every backend's settings. */
function searchConfig(e: Env): Config['search'] {
  return {
    backend: searchBackend(e),
    brave: { apiKey: e.BRAVE_API_KEY, apiRoot: e.BRAVE_API_ROOT },
    tavily: { apiKey: e.TAVILY_API_KEY, apiRoot: e.TAVILY_API_ROOT },
    searxng: { url: e.SEARXNG_URL },
  };
}

/** Webhooks are served apart from the dashboard, so exposing one never exposes the other. */
function checkWebhookPort(config: Config): void {
  if (config.webhook.port !== undefined && config.webhook.port === config.dashboard.port) {
    throw new ConfigError(
      `MAGPIE_WEBHOOK_PORT ${config.webhook.port} is the dashboard's port: give the webhook listener a port of its own (it may face the internet; the dashboard must not)`,
    );
  }
}

/** The state folder holds Redis's password and indexes: never inside the workspace the tools can read. */
function checkStateDirOutsideWorkspace(config: Config): void {
  if (isWithin(config.workspace, config.stateDir)) {
    throw new ConfigError(
      `MAGPIE_STATE_DIR ${config.stateDir} is inside the workspace, where the assistant's tools could read its secrets: set MAGPIE_STATE_DIR to a folder outside ${config.workspace}`,
    );
  }
}

/**
 * The web search backend: MAGPIE_WEB_SEARCH when set (its key or URL must be
 * set too), else the first of brave, tavily, searxng that is configured.
 */
function searchBackend(e: Env): SearchBackendName | undefined {
  const configured: Record<SearchBackendName, [string, string | undefined]> = {
    brave: ['BRAVE_API_KEY', e.BRAVE_API_KEY],
    tavily: ['TAVILY_API_KEY', e.TAVILY_API_KEY],
    searxng: ['SEARXNG_URL', e.SEARXNG_URL],
  };
  const chosen = e.MAGPIE_WEB_SEARCH;
  if (chosen === 'off') return undefined;
  if (chosen !== undefined) {
    const name = chosen as SearchBackendName;
    const [variable, value] = configured[name];
    if (!value)
      throw new ConfigError(`MAGPIE_WEB_SEARCH is ${name} but ${variable} is not set: set it in .env`);
    return name;
  }
  return SEARCH_BACKENDS.find((name) => configured[name][1] !== undefined);
}

/** Values from command-line flags that beat the environment and `.env`. */
export interface ConfigOverrides {
  /** `--workspace DIR`: beats MAGPIE_WORKSPACE. @defaultValue MAGPIE_WORKSPACE */
  workspace?: string | undefined;
}

/** Options of {@link loadConfigWith}. */
export interface LoadConfigOptions extends ConfigNeeds {
  /** Flag values that beat the environment. @defaultValue none */
  overrides?: ConfigOverrides;
  /** The env file read first (variables already set win). @defaultValue '.env' */
  envFile?: string;
}

/** What the env file last read held: part of magpie's environment, never written into process.env. */
let envFileValues: Readonly<Record<string, string>> = {};

/**
 * Loads `.env` from the current folder (variables already set win) and parses
 * the environment, with the command's flags on top. The entry point for
 * commands; the environment itself is never written, so the file's secrets
 * reach no child process and no `/proc/<pid>/environ`.
 *
 * @example loadConfigWith(CHANNELS, { llm: true, overrides: { workspace: values.workspace } })
 */
export function loadConfigWith(
  channels: readonly AnyChannelSlice[],
  options: LoadConfigOptions = {},
): Config {
  const envFile = options.envFile ?? '.env';
  envFileValues = {};
  if (existsSync(envFile)) {
    try {
      const parsed = parseEnv(readFileSync(envFile, 'utf8'));
      envFileValues = Object.fromEntries(
        Object.entries(parsed).filter((e): e is [string, string] => e[1] !== undefined),
      );
    } catch (err) {
      throw new ConfigError(`${envFile} could not be read (${(err as Error).message}): fix or remove it`);
    }
  }
  return parseConfigWith(channels, environment(options.overrides), options);
}

/**
 * magpie's environment: `.env`, then process.env, then the secrets it was
 * handed at re-execution, with the flags' overrides on top; never written
 * back. What the config is parsed from and `${VAR}` in mcp.json expands from.
 */
export function environment(overrides: ConfigOverrides = {}): NodeJS.ProcessEnv {
  const { workspace } = overrides;
  const env = { ...envFileValues, ...process.env, ...heldSecrets() };
  return workspace === undefined ? env : { ...env, MAGPIE_WORKSPACE: workspace };
}

/**
 * `$XDG_STATE_HOME/magpie/<workspace name>-<hash of its path>` (XDG_STATE_HOME defaults
 * to ~/.local/state): one folder per workspace, outside it, so tools cannot reach it.
 */
export function defaultStateDir(workspace: string, env: NodeJS.ProcessEnv): string {
  const home = env.HOME && env.HOME.trim() !== '' ? env.HOME : os.homedir();
  const stateHome = env.XDG_STATE_HOME?.trim() ? env.XDG_STATE_HOME : path.join(home, '.local', 'state');
  const id = createHash('sha256').update(workspace).digest('hex').slice(0, 10);
  return path.join(stateHome, 'magpie', `${path.basename(workspace) || 'workspace'}-${id}`);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

export { debugEnabled } from './debug.js';
export { formatDuration, parseDuration } from './duration.js';
export type { ModelEndpointConfig } from './fallback-models.js';
export type {
  ApprovalConfig,
  ApprovalMode,
  ExecSandboxMode,
  SandboxAccess,
  SandboxConfig,
  UnattendedMode,
} from './sandbox-settings.js';

/**
 * Whether answers to `channel` are shown while they are written (MAGPIE_STREAM, `<CHANNEL>_STREAM`).
 * A named bot account (`telegram-family`) follows its channel's switch (`telegram`).
 */
export function streamsTo(config: Pick<Config, 'stream'>, channel: string): boolean {
  const base = channel.split('-', 1)[0]!;
  return config.stream.channels[channel] ?? config.stream.channels[base] ?? config.stream.enabled;
}

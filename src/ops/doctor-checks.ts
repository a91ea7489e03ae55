/**
 * The checks `magpie doctor` runs, built from the Config: workspace,
 * bootstrap files, exec's sandbox, Redis (reachable, version, noeviction,
 * persistence), every configured model (listed by its endpoint, optionally one
 * live token; doctor-models.ts), Telegram getMe, Discord /users/@me, each MCP
 * server, the web search backend, and a worker seen alive.
 */
import { access, constants, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { findLocalRedis } from '../bus/local-redis.js';
import { connectProducer, displayUrl } from '../bus/redis.js';
import type { Config } from '../config/index.js';
import { describeError } from '../errors/index.js';
import { listTemplateFiles, templatesDir } from '../workspace/templates.js';
import { type Check, type CheckResult, failed, pass, skipped } from './doctor.js';
import { modelChecks } from './doctor-models.js';
import { mcpCheck, searchCheck } from './doctor-reach.js';
import { execSandboxCheck } from './doctor-sandbox.js';
import { listWorkers } from './workers.js';

export interface DoctorOptions {
  config: Config;
  /** Also ask the model for one token. @defaultValue false */
  live?: boolean;
  /** magpie's environment, for `${VAR}` in mcp.json. @defaultValue process.env */
  env?: NodeJS.ProcessEnv;
}

/** The checks plus a `close()` for the Redis connection they share. */
export interface DoctorChecks {
  checks: Check[];
  close(): Promise<void>;
}

/** Builds the doctor's checks in reading order. */
export function buildChecks(options: DoctorOptions): DoctorChecks {
  const { config } = options;
  let redis: Redis | undefined;
  let redisUrl: string | undefined;
  const initHint = `magpie init --workspace ${config.workspace}`;
  const checks: Check[] = [
    {
      name: 'workspace',
      async run() {
        const exists = await stat(config.workspace).then(
          (s) => s.isDirectory(),
          () => false,
        );
        if (!exists) return failed(`${config.workspace} does not exist`, initHint);
        const probe = path.join(config.workspace, `.doctor-${process.pid}`);
        try {
          await writeFile(probe, 'ok');
          await rm(probe, { force: true });
        } catch (err) {
          return failed(
            `${config.workspace} is not writable (${describeError(err)})`,
            `chown -R $(id -un) ${config.workspace}`,
          );
        }
        return pass(`${config.workspace} (writable)`);
      },
    },
    {
      name: 'bootstrap files',
      async run() {
        const wanted = (await listTemplateFiles(templatesDir())).filter((f) => !f.includes('/'));
        const missing: string[] = [];
        for (const file of wanted) {
          await access(path.join(config.workspace, file), constants.R_OK).catch(() => missing.push(file));
        }
        if (missing.length > 0)
          return failed(
            `missing ${missing.join(', ')}`,
            `${initHint} (adds what is missing, never overwrites)`,
          );
        return pass(wanted.join(', '));
      },
    },
    execSandboxCheck(config),
    {
      name: 'redis',
      async run() {
        redisUrl = config.redis.url ?? (await findLocalRedis(config.stateDir));
        if (!redisUrl) {
          return skipped(
            'REDIS_URL unset and no private redis-server running; "magpie start" starts one (appendonly, noeviction)',
          );
        }
        try {
          redis = await connectProducer(redisUrl);
        } catch (err) {
          return failed(
            describeError(err),
            `start Redis or fix REDIS_URL in .env (now ${displayUrl(redisUrl)})`,
          );
        }
        const info = await redis.info();
        const field = (name: string) => new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
        const results: CheckResult[] = [
          pass(`reachable at ${displayUrl(redisUrl)}, version ${field('redis_version') ?? '?'}`),
        ];
        const policy = field('maxmemory_policy');
        results.push(
          policy === 'noeviction'
            ? pass('maxmemory-policy noeviction')
            : failed(
                `maxmemory-policy is ${policy ?? 'unknown'}: Redis may evict queued jobs`,
                'redis-cli CONFIG SET maxmemory-policy noeviction (and "maxmemory-policy noeviction" in redis.conf)',
              ),
        );
        const aof = field('aof_enabled') === '1';
        const save = await configGet(redis, 'save');
        results.push(
          aof || (save !== undefined && save !== '')
            ? pass(`persistence on (${aof ? 'appendonly' : `save ${save}`})`)
            : failed(
                'persistence off: a Redis restart loses queued messages',
                'redis-cli CONFIG SET appendonly yes (and "appendonly yes" in redis.conf)',
              ),
        );
        return results;
      },
    },
  ];
  // Every configured model: MAGPIE_MODEL, then each fallback (with --live, one token from each).
  checks.push(...modelChecks(config, options.live === true));
  checks.push(
    {
      name: 'telegram',
      async run(signal) {
        const token = config.telegram.token;
        if (!token) return skipped('TELEGRAM_BOT_TOKEN not set (channel off)');
        const root = config.telegram.apiRoot ?? 'https://api.telegram.org';
        const res = await reach(`${root}/bot${token}/getMe`, {}, signal);
        if (!res) return unreachable(root, 'TELEGRAM_API_ROOT');
        const body = (await res.json().catch(() => ({}))) as { ok?: boolean; result?: { username?: string } };
        if (res.ok && body.ok) return pass(`bot @${body.result?.username ?? '?'}`);
        return failed(
          `getMe answered ${res.status}: the token is ${res.status === 401 || res.status === 404 ? 'invalid' : 'not accepted'}`,
          'put the token from @BotFather in TELEGRAM_BOT_TOKEN in .env',
        );
      },
    },
    {
      name: 'discord',
      async run(signal) {
        const token = config.discord.token;
        if (!token) return skipped('DISCORD_BOT_TOKEN not set (channel off)');
        const root = config.discord.apiRoot ?? 'https://discord.com/api';
        const res = await reach(`${root}/v10/users/@me`, { authorization: `Bot ${token}` }, signal);
        if (!res) return unreachable(root, 'DISCORD_API_ROOT');
        const body = (await res.json().catch(() => ({}))) as { username?: string };
        if (res.ok) return pass(`bot ${body.username ?? '?'}`);
        return failed(
          `GET /users/@me answered ${res.status}: the token is ${res.status === 401 ? 'invalid' : 'not accepted'}`,
          'put the bot token from the Discord developer portal in DISCORD_BOT_TOKEN in .env',
        );
      },
    },
    mcpCheck(config, options.env ?? process.env),
    searchCheck(config),
    {
      name: 'daemon',
      async run() {
        if (!redis) return skipped('no Redis to look in');
        const workers = await listWorkers(redis, config.redis.prefix);
        if (workers.length === 0) {
          return failed(
            'no worker seen running',
            'start one: "magpie start", or "pm2 start ecosystem.config.js"',
          );
        }
        const slots = workers.reduce((n, w) => n + w.concurrency, 0);
        return pass(`${workers.length} worker${workers.length === 1 ? '' : 's'} alive (${slots} turn slots)`);
      },
    },
  );
  return {
    checks,
    async close() {
      redis?.disconnect();
    },
  };
}

async function configGet(redis: Redis, name: string): Promise<string | undefined> {
  try {
    const reply = (await redis.call('CONFIG', 'GET', name)) as string[];
    return reply[1];
  } catch (_err) {
    return undefined; // managed Redis often forbids CONFIG; INFO decided what it could
  }
}

/** GETs `url`; undefined when it cannot be reached (the error text could carry the token, so it is dropped). */
async function reach(
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<Response | undefined> {
  try {
    return await fetch(url, { headers, signal });
  } catch (_err) {
    return undefined; // reported as unreachable by the caller
  }
}

function unreachable(root: string, variable: string): CheckResult {
  return failed(`cannot reach ${root}`, `check the network (or ${variable} in .env, when set)`);
}

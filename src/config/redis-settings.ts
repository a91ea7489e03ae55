/**
 * The bus's Redis settings: one server (REDIS_URL, or the private redis-server
 * when unset) or a Sentinel-watched master (REDIS_SENTINELS, REDIS_SENTINEL_NAME),
 * its password (in REDIS_URL or REDIS_PASSWORD) and how many replicas must
 * hold a write before a platform is told "received" (MAGPIE_REDIS_MIN_REPLICAS).
 */
import { z } from 'zod';
import { ConfigError } from '../errors/index.js';
import { duration, optionalText, redisUrl } from './env-values.js';

/** One Sentinel's address. */
export interface SentinelAddress {
  host: string;
  port: number;
}

/** A master found through Sentinel; credentials, TLS and database come from REDIS_URL / REDIS_PASSWORD. */
export interface SentinelSettings {
  /** REDIS_SENTINELS, in the order given. */
  sentinels: readonly SentinelAddress[];
  /** REDIS_SENTINEL_NAME: the master's name in `sentinel monitor <name> …` (default mymaster). */
  name: string;
  /** REDIS_SENTINEL_PASSWORD: the Sentinels' own `requirepass`, when they have one. */
  sentinelPassword: string | undefined;
  username: string | undefined;
  password: string | undefined;
  /** REDIS_URL is `rediss://`: TLS to the Sentinels and to the master. */
  tls: boolean;
  db: number;
}

/** `Config['redis']`. */
export interface RedisConfig {
  /** REDIS_URL with REDIS_PASSWORD put in; undefined: the private redis-server (or Sentinel). */
  url: string | undefined;
  /** The master's password (REDIS_URL's or REDIS_PASSWORD), for redaction. */
  password: string | undefined;
  /** Set when REDIS_SENTINELS is: the master is found through them and followed across failovers. */
  sentinel: SentinelSettings | undefined;
  prefix: string;
  concurrency: number;
  /**
   * MAGPIE_REDIS_MIN_REPLICAS (0 = off): replicas that must confirm an inbound message and an
   * outbound record (`WAIT`) before the publish resolves; fewer refuse the publish.
   */
  minReplicas: number;
  /** MAGPIE_REDIS_WAIT_TIMEOUT (default 1s): how long `WAIT` waits for them. */
  waitTimeoutMs: number;
}

const HOST = /^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$|^\[[0-9A-Fa-f:.]+\]$/;

/** `host:port,host:port` → addresses; a message naming the bad entry otherwise. */
export function parseSentinels(text: string): SentinelAddress[] | string {
  const entries = text.split(',').map((s) => s.trim());
  const addresses: SentinelAddress[] = [];
  for (const entry of entries) {
    const match = /^(.+):(\d{1,5})$/.exec(entry);
    const port = match ? Number(match[2]) : 0;
    if (!match || !HOST.test(match[1]!) || port < 1 || port > 65_535) {
      return `entry "${entry}" is not host:port (expected e.g. 10.0.0.1:26379,10.0.0.2:26379,10.0.0.3:26379)`;
    }
    addresses.push({ host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port });
  }
  return addresses;
}

/** The Redis variables of the environment schema (config/index.ts). */
export const REDIS_ENV = {
  REDIS_URL: redisUrl(),
  REDIS_PASSWORD: optionalText,
  REDIS_SENTINELS: optionalText.transform((v, ctx) => {
    if (v === undefined) return undefined;
    const parsed = parseSentinels(v);
    if (typeof parsed === 'string') {
      ctx.addIssue({ code: 'custom', message: parsed });
      return z.NEVER;
    }
    return parsed;
  }),
  REDIS_SENTINEL_NAME: z
    .string()
    .default('mymaster')
    .refine((v) => /^[A-Za-z0-9._-]+$/.test(v), {
      message: 'may hold only letters, digits, ".", "_" and "-"',
    }),
  REDIS_SENTINEL_PASSWORD: optionalText,
  MAGPIE_REDIS_MIN_REPLICAS: z
    .string()
    .default('0')
    .transform((v, ctx) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0 || n > 100) {
        ctx.addIssue({ code: 'custom', message: `"${v}" must be a whole number from 0 (off) to 100` });
        return z.NEVER;
      }
      return n;
    }),
  MAGPIE_REDIS_WAIT_TIMEOUT: duration('1s'),
};

type RedisEnv = { [K in keyof typeof REDIS_ENV]: z.output<(typeof REDIS_ENV)[K]> };

/** The validated Redis variables → `Config['redis']`; ConfigError (one line) when they disagree. */
export function redisConfig(e: RedisEnv, bus: { prefix: string; concurrency: number }): RedisConfig {
  const url = e.REDIS_URL === undefined ? undefined : new URL(e.REDIS_URL);
  if (url?.password && e.REDIS_PASSWORD) {
    throw new ConfigError(
      'REDIS_URL holds a password and REDIS_PASSWORD is set too: keep the password in one of them',
    );
  }
  if (url && e.REDIS_PASSWORD) url.password = encodeURIComponent(e.REDIS_PASSWORD);
  const password = url?.password ? decodeURIComponent(url.password) : e.REDIS_PASSWORD;
  const sentinels = e.REDIS_SENTINELS;
  if (!sentinels && e.REDIS_PASSWORD && !url) {
    throw new ConfigError(
      'REDIS_PASSWORD is set but neither REDIS_URL nor REDIS_SENTINELS is: say which Redis it is for',
    );
  }
  return {
    url: url?.toString(),
    password,
    sentinel: sentinels
      ? {
          sentinels,
          name: e.REDIS_SENTINEL_NAME,
          sentinelPassword: e.REDIS_SENTINEL_PASSWORD,
          username: url?.username ? decodeURIComponent(url.username) : undefined,
          password,
          tls: url?.protocol === 'rediss:',
          db: databaseOf(url),
        }
      : undefined,
    prefix: bus.prefix,
    concurrency: bus.concurrency,
    minReplicas: e.MAGPIE_REDIS_MIN_REPLICAS,
    waitTimeoutMs: e.MAGPIE_REDIS_WAIT_TIMEOUT,
  };
}

/** The database number of `redis://host/3`; 0 when none. */
function databaseOf(url: URL | undefined): number {
  const text = url?.pathname.replace(/^\//, '') ?? '';
  if (text === '') return 0;
  const db = Number(text);
  if (!Number.isInteger(db) || db < 0) {
    throw new ConfigError(
      `REDIS_URL's database "${text}" is not a whole number: use e.g. redis://host:6379/0`,
    );
  }
  return db;
}

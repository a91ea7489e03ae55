/**
 * The bus's Redis settings: one server (REDIS_URL, or the private redis-server
 * when unset), a Sentinel-watched master (REDIS_SENTINELS, REDIS_SENTINEL_NAME)
 * or a Redis Cluster (REDIS_CLUSTER_NODES, with a hash-tagged key prefix), its password (in REDIS_URL or REDIS_PASSWORD),
 * TLS (a `rediss://` REDIS_URL, with REDIS_TLS_CA, REDIS_TLS_CERT and REDIS_TLS_KEY for a private CA and
 * client certificates) and how many replicas must hold a write before a platform is told "received"
 * (MAGPIE_REDIS_MIN_REPLICAS).
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../errors/index.js';
import { duration, optionalText, redisUrl } from './env-values.js';
import { isWithin } from './sandbox-settings.js';

/** One Sentinel's address. */
export interface SentinelAddress {
  host: string;
  port: number;
}

/**
 * TLS to Redis, on when REDIS_URL is `rediss://`: the server's certificate is checked against
 * `ca` when given (REDIS_TLS_CA, e.g. a private CA), else against Node's public CAs, and for the
 * host magpie connects to, or `servername` (REDIS_TLS_SERVERNAME) when set; `cert` and `key`
 * (REDIS_TLS_CERT, REDIS_TLS_KEY) are the client certificate a Redis with `tls-auth-clients yes`
 * asks for. The three are files' PEM text, read once. Node's own TLS option names.
 */
export interface RedisTls {
  ca?: string;
  cert?: string;
  key?: string;
  /**
   * The name the server's certificate must hold (and SNI): for Sentinels and Clusters that hand
   * out addresses while the certificate names a host.
   */
  servername?: string;
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
  /** Set when REDIS_URL is `rediss://`: TLS to the Sentinels and to the master. */
  tls: RedisTls | undefined;
  db: number;
}

/** A Redis Cluster reached through some of its nodes; credentials and TLS come from REDIS_URL / REDIS_PASSWORD. */
export interface ClusterSettings {
  /** REDIS_CLUSTER_NODES, in the order given: where the cluster's slot map is first asked for. */
  nodes: readonly SentinelAddress[];
  username: string | undefined;
  password: string | undefined;
  /** Set when REDIS_URL is `rediss://`: TLS to every node. */
  tls: RedisTls | undefined;
}

/** `Config['redis']`. */
export interface RedisConfig {
  /** REDIS_URL with REDIS_PASSWORD put in; undefined: the private redis-server (or Sentinel). */
  url: string | undefined;
  /** The master's password (REDIS_URL's or REDIS_PASSWORD), for redaction. */
  password: string | undefined;
  /** Set when REDIS_URL is `rediss://` (REDIS_URL's server, the Sentinels and master, or the Cluster's nodes). */
  tls: RedisTls | undefined;
  /** Set when REDIS_SENTINELS is: the master is found through them and followed across failovers. */
  sentinel: SentinelSettings | undefined;
  /** Set when REDIS_CLUSTER_NODES is: every connection is an ioredis Cluster. */
  cluster: ClusterSettings | undefined;
  /**
   * Every key's first part (MAGPIE_QUEUE_PREFIX): as given on one server or Sentinel, and
   * hash-tagged (`{magpie}`) on a Cluster so all of magpie's and BullMQ's keys share one slot.
   */
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
  return parseAddresses(text, '10.0.0.1:26379,10.0.0.2:26379,10.0.0.3:26379');
}

/** `host:port,host:port` → addresses; a message naming the bad entry (and showing `example`) otherwise. */
function parseAddresses(text: string, example: string): SentinelAddress[] | string {
  const entries = text.split(',').map((s) => s.trim());
  const addresses: SentinelAddress[] = [];
  for (const entry of entries) {
    const match = /^(.+):(\d{1,5})$/.exec(entry);
    const port = match ? Number(match[2]) : 0;
    if (!match || !HOST.test(match[1]!) || port < 1 || port > 65_535) {
      return `entry "${entry}" is not host:port (expected e.g. ${example})`;
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
  REDIS_CLUSTER_NODES: optionalText.transform((v, ctx) => {
    if (v === undefined) return undefined;
    const parsed = parseAddresses(v, '10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379');
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
  REDIS_TLS_CA: optionalText,
  REDIS_TLS_CERT: optionalText,
  REDIS_TLS_KEY: optionalText,
  REDIS_TLS_SERVERNAME: optionalText.refine(
    (v) =>
      v === undefined ||
      /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/.test(
        v,
      ),
    { message: 'must be a host name such as redis.internal' },
  ),
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
export function redisConfig(
  e: RedisEnv,
  bus: { prefix: string; concurrency: number; workspace: string },
): RedisConfig {
  const url = e.REDIS_URL === undefined ? undefined : new URL(e.REDIS_URL);
  if (url?.password && e.REDIS_PASSWORD) {
    throw new ConfigError(
      'REDIS_URL holds a password and REDIS_PASSWORD is set too: keep the password in one of them',
    );
  }
  if (url && e.REDIS_PASSWORD) url.password = encodeURIComponent(e.REDIS_PASSWORD);
  const password = url?.password ? decodeURIComponent(url.password) : e.REDIS_PASSWORD;
  const sentinels = e.REDIS_SENTINELS;
  const clusterNodes = e.REDIS_CLUSTER_NODES;
  if (!sentinels && !clusterNodes && e.REDIS_PASSWORD && !url) {
    throw new ConfigError(
      'REDIS_PASSWORD is set but none of REDIS_URL, REDIS_SENTINELS and REDIS_CLUSTER_NODES is: say which Redis it is for',
    );
  }
  if (clusterNodes) checkClusterFits(e, url);
  const username = url?.username ? decodeURIComponent(url.username) : undefined;
  const tls = redisTls(e, url?.protocol === 'rediss:', bus.workspace);
  return {
    url: url?.toString(),
    password,
    tls,
    sentinel: sentinels
      ? {
          sentinels,
          name: e.REDIS_SENTINEL_NAME,
          sentinelPassword: e.REDIS_SENTINEL_PASSWORD,
          username,
          password,
          tls,
          db: databaseOf(url),
        }
      : undefined,
    cluster: clusterNodes ? { nodes: clusterNodes, username, password, tls } : undefined,
    prefix: clusterNodes ? clusterPrefix(bus.prefix) : bus.prefix,
    concurrency: bus.concurrency,
    minReplicas: e.MAGPIE_REDIS_MIN_REPLICAS,
    waitTimeoutMs: e.MAGPIE_REDIS_WAIT_TIMEOUT,
  };
}

/**
 * The key prefix on a Cluster: MAGPIE_QUEUE_PREFIX in braces, a hash tag, so every key
 * magpie and BullMQ make (`{magpie}:mailbox:…`, `{magpie}:turns:wait`) lands in one slot
 * and each script and MULTI stays inside it. One server and Sentinel keep the plain prefix.
 *
 * @example clusterPrefix('magpie') // '{magpie}'
 */
export function clusterPrefix(prefix: string): string {
  return `{${prefix}}`;
}

/** ConfigError when REDIS_CLUSTER_NODES is set with a setting a Cluster cannot honour. */
function checkClusterFits(e: RedisEnv, url: URL | undefined): void {
  if (e.REDIS_SENTINELS) {
    throw new ConfigError(
      'REDIS_CLUSTER_NODES and REDIS_SENTINELS are both set: a Cluster fails over by itself, keep one of them',
    );
  }
  if (databaseOf(url) !== 0) {
    throw new ConfigError('REDIS_URL names a database other than 0, and a Redis Cluster has only database 0');
  }
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

/** The TLS variables, each naming a PEM file. */
const TLS_FILES = [
  ['REDIS_TLS_CA', 'ca'],
  ['REDIS_TLS_CERT', 'cert'],
  ['REDIS_TLS_KEY', 'key'],
] as const;

/**
 * TLS to Redis when `on` (a `rediss://` REDIS_URL): the PEM text of each file REDIS_TLS_* names,
 * each checked to be what it says. ConfigError (one line naming the variable) for a file set
 * without TLS on, a certificate without its key (or the reverse) or with another one's, a file that
 * cannot be read or holds something else, and a key inside the workspace, where the agent's tools
 * could read it.
 */
function redisTls(e: RedisEnv, on: boolean, workspace: string): RedisTls | undefined {
  const given = TLS_FILES.filter(([variable]) => e[variable] !== undefined);
  if (!on) {
    const set = given[0]?.[0] ?? (e.REDIS_TLS_SERVERNAME === undefined ? undefined : 'REDIS_TLS_SERVERNAME');
    if (set === undefined) return undefined;
    throw new ConfigError(
      `${set} is set but REDIS_URL is not rediss://: TLS to Redis is turned on by a rediss:// REDIS_URL (with REDIS_SENTINELS or REDIS_CLUSTER_NODES its host is not used, e.g. rediss://:password@redis)`,
    );
  }
  if ((e.REDIS_TLS_CERT === undefined) !== (e.REDIS_TLS_KEY === undefined)) {
    const [set, missing] =
      e.REDIS_TLS_CERT === undefined
        ? ['REDIS_TLS_KEY', 'REDIS_TLS_CERT']
        : ['REDIS_TLS_CERT', 'REDIS_TLS_KEY'];
    throw new ConfigError(`${set} is set but ${missing} is not: a client certificate needs both`);
  }
  const tls: RedisTls = e.REDIS_TLS_SERVERNAME === undefined ? {} : { servername: e.REDIS_TLS_SERVERNAME };
  for (const [variable, field] of given) {
    const file = path.resolve(e[variable]!);
    if (field === 'key') checkKeyOutsideWorkspace(file, workspace);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code ?? 'unreadable';
      throw new ConfigError(`${variable} ${file} cannot be read (${reason}): name a PEM file`);
    }
    checkPem(variable, file, field, text);
    tls[field] = text;
  }
  if (tls.cert && tls.key && !new X509Certificate(tls.cert).checkPrivateKey(createPrivateKey(tls.key))) {
    throw new ConfigError(
      `REDIS_TLS_KEY ${path.resolve(e.REDIS_TLS_KEY!)} is not the key of the certificate REDIS_TLS_CERT names: give the pair that belongs together`,
    );
  }
  return tls;
}

/** ConfigError unless `text` holds what `field` needs: certificates, or one private key (not encrypted). */
function checkPem(variable: string, file: string, field: 'ca' | 'cert' | 'key', text: string): void {
  try {
    if (field === 'key') createPrivateKey(text);
    else new X509Certificate(text);
  } catch {
    const what = field === 'key' ? 'an unencrypted PEM private key' : 'PEM certificates';
    throw new ConfigError(`${variable} ${file} does not hold ${what}`);
  }
}

/** ConfigError when the key file (or what a link there leads to) is inside the workspace. */
function checkKeyOutsideWorkspace(file: string, workspace: string): void {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  if (isWithin(path.resolve(workspace), file) || isWithin(real(workspace), real(file))) {
    throw new ConfigError(
      `REDIS_TLS_KEY ${file} is inside the workspace (${workspace}), where the assistant's tools could read it: keep it outside, e.g. beside .env`,
    );
  }
}

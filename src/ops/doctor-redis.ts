/**
 * `magpie doctor`'s checks that read Redis: reachable (version, noeviction,
 * persistence), this workspace is the bus's, and a worker seen alive. They
 * share one connection, opened by the Redis check and closed by the doctor.
 */
import { findLocalRedis } from '../bus/local-redis.js';
import {
  connectProducer,
  describeTarget,
  type RedisConnection,
  type RedisTarget,
  redisServerInfo,
  type SentinelWatch,
  sentinelWatch,
  serverCertificate,
  serverTarget,
} from '../bus/redis.js';
import { listWorkers } from '../bus/worker-beats.js';
import { recordedWorkspace } from '../bus/workspace-record.js';
import type { Config } from '../config/index.js';
import { describeError } from '../errors/index.js';
import { readWorkspaceId } from '../workspace/identity.js';
import { type Check, type CheckResult, failed, pass, skipped, warned } from './doctor.js';
import { tlsCertificateResults } from './doctor-tls.js';

/**
 * Sentinels quicker than this fail over masters they have just switched to: they ping at most
 * once a second, and a new master that misses its first ping's deadline is taken for down. A
 * second failover on the heels of the first can promote a replica without the latest messages
 * (docs/DEPLOYMENT.md, "Redis Sentinel").
 */
const SAFE_DOWN_AFTER_MS = 2_000;

/** The connection the Redis checks share: set by {@link redisCheck}, ended by `close()`. */
export class DoctorRedis {
  /** The connection, once the Redis check reached Redis. */
  redis: RedisConnection | undefined;

  /** Ends the connection, if one was made. Safe to call more than once. */
  close(): void {
    this.redis?.disconnect();
  }
}

/** Redis is reachable, keeps what it is given (noeviction) and survives a restart (persistence). */
export function redisCheck(config: Config, shared: DoctorRedis): Check {
  return {
    name: 'redis',
    async run() {
      const { sentinel, cluster } = config.redis;
      const url =
        sentinel || cluster ? undefined : (config.redis.url ?? (await findLocalRedis(config.stateDir)));
      let target: RedisTarget;
      if (sentinel) target = { kind: 'sentinel', ...sentinel };
      else if (cluster) target = { kind: 'cluster', ...cluster };
      else if (url) target = serverTarget(url, config.redis.tls);
      else {
        return skipped(
          'REDIS_URL unset and no private redis-server running; "magpie start" starts one (appendonly, noeviction)',
        );
      }
      let redis: RedisConnection;
      try {
        redis = await connectProducer(target);
      } catch (err) {
        return failed(
          describeError(err),
          sentinel
            ? `start the Sentinels or fix REDIS_SENTINELS / REDIS_SENTINEL_NAME in .env (now ${describeTarget(target)})`
            : cluster
              ? `start the Cluster's nodes or fix REDIS_CLUSTER_NODES in .env (now ${describeTarget(target)})`
              : `start Redis or fix REDIS_URL in .env (now ${describeTarget(target)})`,
        );
      }
      shared.redis = redis;
      const server = await redisServerInfo(redis);
      const results: CheckResult[] = [
        pass(`reachable at ${describeTarget(target, redis)}, version ${server.version ?? '?'}`),
      ];
      const { minReplicas } = config.redis;
      if (minReplicas > 0) {
        results.push(
          server.replicas >= minReplicas
            ? pass(`${server.replicas} replica(s) connected (MAGPIE_REDIS_MIN_REPLICAS=${minReplicas})`)
            : failed(
                `${server.replicas} replica(s) connected, MAGPIE_REDIS_MIN_REPLICAS=${minReplicas}: every publish is refused`,
                'start the replicas (replicaof) or lower MAGPIE_REDIS_MIN_REPLICAS',
              ),
        );
      }
      if (sentinel) results.push(watchResult(await sentinelWatch(redis), sentinel.name));
      results.push(...tlsCertificateResults(serverCertificate(redis), config.redis.tls?.cert, new Date()));
      const policy = server.maxmemoryPolicy;
      results.push(
        policy === 'noeviction'
          ? pass('maxmemory-policy noeviction')
          : failed(
              `maxmemory-policy is ${policy ?? 'unknown'}: Redis may evict queued jobs`,
              'redis-cli CONFIG SET maxmemory-policy noeviction (and "maxmemory-policy noeviction" in redis.conf)',
            ),
      );
      const { aof, save } = server;
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
  };
}

/** How the Sentinels watch the master: a down-after below {@link SAFE_DOWN_AFTER_MS} is warned of. */
function watchResult(watch: SentinelWatch | undefined, name: string): CheckResult {
  if (!watch) return skipped(`no Sentinel answered SENTINEL MASTER ${name}`);
  const line = `Sentinels: master down after ${watch.downAfterMs} ms, quorum ${watch.quorum}, ${watch.replicas} replica(s)`;
  if (watch.downAfterMs >= SAFE_DOWN_AFTER_MS) return pass(line);
  return warned(
    `${line}: under 2 s, near their 1 s ping period, they fail over masters they have just switched to, which can lose acknowledged messages`,
    `on each Sentinel: redis-cli -p <port> SENTINEL SET ${name} down-after-milliseconds 5000 (it is saved in sentinel.conf)`,
  );
}

/** This workspace's id (.magpie-id) is the one the bus serves, so a worker here would start. */
export function workspaceIdentityCheck(config: Config, shared: DoctorRedis): Check {
  return {
    name: 'workspace id',
    async run() {
      if (!shared.redis) return skipped('no Redis to look in');
      let id: string | undefined;
      try {
        id = await readWorkspaceId(config.workspace);
      } catch (err) {
        return failed(describeError(err), 'put back the original .magpie-id (see docs/DEPLOYMENT.md)');
      }
      const recorded = await recordedWorkspace(shared.redis, config.redis.prefix);
      if (!id) return pass('none yet: the first start gives the workspace its id');
      if (!recorded) return pass(`${id} (not on the bus yet: the first start records it)`);
      if (recorded === id) return pass(`${id}, the one the bus serves`);
      return failed(
        `this workspace is ${id}, but the bus (prefix "${config.redis.prefix}") serves ${recorded}: workers here refuse to start`,
        'set MAGPIE_WORKSPACE to the workspace the bus serves, on a shared volume (docs/DEPLOYMENT.md, "Several machines")',
      );
    },
  };
}

/** At least one worker's heartbeat key is alive. */
export function daemonCheck(config: Config, shared: DoctorRedis): Check {
  return {
    name: 'daemon',
    async run() {
      if (!shared.redis) return skipped('no Redis to look in');
      const workers = await listWorkers(shared.redis, config.redis.prefix);
      if (workers.length === 0) {
        return failed(
          'no worker seen running',
          'start one: "magpie start", or "pm2 start ecosystem.config.js"',
        );
      }
      const slots = workers.reduce((n, w) => n + w.concurrency, 0);
      return pass(`${workers.length} worker${workers.length === 1 ? '' : 's'} alive (${slots} turn slots)`);
    },
  };
}

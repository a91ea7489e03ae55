/**
 * Redis connections for the bus. BullMQ workers get connections that wait
 * forever for Redis (`maxRetriesPerRequest: null`); producers fail fast when
 * Redis is away, so a channel can report the failure instead of hanging.
 * On a Redis Cluster every connection is an ioredis Cluster (see {@link newRedis}).
 */
import { isIP } from 'node:net';
import { TLSSocket } from 'node:tls';
import calculateSlot from 'cluster-key-slot';
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import type { ClusterSettings, RedisTls, SentinelSettings } from '../config/redis-settings.js';
import { AppError, ExitCode } from '../errors/index.js';

/**
 * Where the bus's Redis is: one server by URL, the master a set of Sentinels
 * names (every connection asks them again after a failover and follows the new master),
 * or a Redis Cluster found through some of its nodes.
 */
export type RedisTarget =
  | { kind: 'server'; url: string; tls?: RedisTls }
  | ({ kind: 'sentinel' } & SentinelSettings)
  | ({ kind: 'cluster' } & ClusterSettings);

/** The target of one server at `url`; `tls` (REDIS_TLS_*) for a `rediss://` URL. */
export function serverTarget(url: string, tls?: RedisTls): RedisTarget {
  return tls ? { kind: 'server', url, tls } : { kind: 'server', url };
}

/**
 * ioredis options that find the master through Sentinel: asked at every
 * (re)connect, `role: 'master'`, and a reconnect when a write meets a demoted
 * master (READONLY), and a reconnect when the Sentinels announce a new master
 * (`failoverDetector`), so a connection follows the master through a failover.
 */
export function sentinelOptions(target: SentinelSettings): RedisOptions {
  return {
    sentinels: target.sentinels.map(({ host, port }) => ({ host, port })),
    name: target.name,
    role: 'master',
    db: target.db,
    ...(target.username ? { username: target.username } : {}),
    ...(target.password ? { password: target.password } : {}),
    ...(target.sentinelPassword ? { sentinelPassword: target.sentinelPassword } : {}),
    ...(target.tls
      ? { tls: { ...target.tls }, enableTLSForSentinelMode: true, sentinelTLS: { ...target.tls } }
      : {}),
    // Ask the Sentinels again quickly while they elect a new master.
    sentinelRetryStrategy: (times: number) => Math.min(times * 100, 1_000),
    // Leave a master as soon as the Sentinels name another (their `+switch-master`). Without it a
    // connection stays on a master the Sentinels replaced while it still answered (a second
    // failover right after the first: the new master was slow to answer them): writes go through
    // there, WAIT finds no replica, and nothing moves until the Sentinels demote it 8+ s later.
    failoverDetector: true,
    reconnectOnError: (err: Error) => err.message.startsWith('READONLY'),
  };
}

/** How soon a Sentinel connection ioredis gave up mid-reconnect is connected again. */
const REVIVE_DELAY_MS = 100;

/**
 * Keeps a Sentinel connection following the master. ioredis ends such a connection for good
 * (status `end`, no retry) when a reconnect is asked for while it is still asking the
 * Sentinels for the master (a READONLY reply, a role check meeting a replica, BullMQ
 * interrupting its blocking connection): the connect attempt is rejected with "Connection is
 * closed." and nothing connects again. Under a failover that left a turn worker without a
 * connection (its job locked until it died) and a CLI watcher deaf. Such an end — straight
 * from `connecting`, never closed by its owner — is connected again here; so are the
 * connections `duplicate()` makes (BullMQ's blocking ones).
 */
function followMaster(redis: Redis): Redis {
  let closedByOwner = false;
  let last = '';
  const disconnect = redis.disconnect.bind(redis);
  redis.disconnect = (reconnect = false) => {
    if (!reconnect) closedByOwner = true;
    disconnect(reconnect);
  };
  const quit = redis.quit.bind(redis);
  redis.quit = ((...args: Parameters<Redis['quit']>) => {
    closedByOwner = true;
    return quit(...args);
  }) as Redis['quit'];
  const duplicate = redis.duplicate.bind(redis);
  redis.duplicate = (...args: Parameters<Redis['duplicate']>) => followMaster(duplicate(...args));
  redis.on('connecting', () => {
    last = 'connecting';
  });
  redis.on('close', () => {
    last = 'close';
    // The closed connection's failover detector would otherwise stay subscribed while ioredis asks
    // the Sentinels again, and a `+switch-master` then (every SIGKILL failover) ends that connect
    // attempt ("Connection is closed.", rejected to whoever awaited connect(), BullMQ's reconnect).
    // The next connection subscribes afresh and checks where it landed (failoverSubscribed).
    dropFailoverDetector(redis);
  });
  // ioredis watches the Sentinels for `+switch-master` only from after it connected: a switch
  // between asking them for the master and that subscription would leave this connection on
  // a master they replaced (a second failover right after the first). Once subscribed, ask once.
  redis.on('failoverSubscribed', () => {
    void leaveReplacedMaster(redis);
  });
  redis.on('end', () => {
    // ioredis drops the detector's Sentinel subscriptions on disconnect() only, not after QUIT.
    if (closedByOwner) dropFailoverDetector(redis);
    if (closedByOwner || last !== 'connecting') return;
    last = '';
    setTimeout(() => {
      if (!closedByOwner && redis.status === 'end') redis.connect().catch(() => undefined);
    }, REVIVE_DELAY_MS).unref();
  });
  return redis;
}

/** The master's address as the first Sentinel that answers names it, or undefined when none does. */
async function masterNamedBySentinels(
  options: RedisOptions,
): Promise<{ host: string; port: number } | undefined> {
  const addr = (await askSentinels(options, 'GET-MASTER-ADDR-BY-NAME', options.name ?? '')) as
    | [string, string]
    | null
    | undefined;
  return addr ? { host: addr[0], port: Number(addr[1]) } : undefined;
}

/** The first answer of `SENTINEL <args>` from the Sentinels of `options`, tried in order; undefined when none answers. */
async function askSentinels(options: RedisOptions, ...args: string[]): Promise<unknown> {
  for (const sentinel of options.sentinels ?? []) {
    const asked = new Redis({
      host: sentinel.host,
      port: sentinel.port,
      ...(options.sentinelPassword ? { password: options.sentinelPassword } : {}),
      ...(options.enableTLSForSentinelMode ? { tls: options.sentinelTLS ?? {} } : {}),
      lazyConnect: true,
      connectTimeout: 1_000,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    asked.on('error', () => undefined);
    try {
      await asked.connect();
      const answer = await asked.call('SENTINEL', ...args);
      if (answer !== null) return answer;
    } catch {
      // This Sentinel is away: the next one is asked.
    } finally {
      asked.disconnect();
    }
  }
  return undefined;
}

/** How the Sentinels watch the master (`SENTINEL MASTER <name>`). */
export interface SentinelWatch {
  /** `down-after-milliseconds`: how long the master may not answer before a failover. */
  downAfterMs: number;
  quorum: number;
  /** Replicas the Sentinels know of. */
  replicas: number;
}

/**
 * How the Sentinels behind the Sentinel connection `redis` watch its master, as the first
 * one that answers says; undefined for a connection not made through Sentinels, or none answering.
 */
export async function sentinelWatch(redis: Redis): Promise<SentinelWatch | undefined> {
  const options = redis.options;
  if (!options.sentinels?.length) return undefined;
  const fields = await askSentinels(options, 'MASTER', options.name ?? '');
  if (!Array.isArray(fields)) return undefined;
  const field = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) field.set(String(fields[i]), String(fields[i + 1]));
  return {
    downAfterMs: Number(field.get('down-after-milliseconds')),
    quorum: Number(field.get('quorum')),
    replicas: Number(field.get('num-slaves')),
  };
}

/**
 * Stops and forgets the ioredis failover detector of `redis`'s last connection, if any. Once
 * only: ioredis's `disconnect()` has already stopped it when 'close' comes, and stopping it
 * again ends its Sentinel connections a second time. Each end of a connection whose socket has
 * closed starts a 2 s timer that nothing clears, which held every stopped process after a
 * failover for 2 s (the exit grace's "something kept the process alive").
 */
function dropFailoverDetector(redis: Redis): void {
  const connector = (
    redis as unknown as {
      connector?: { failoverDetector?: { isDisconnected: boolean; cleanup(): void } | null };
    }
  ).connector;
  const detector = connector?.failoverDetector;
  if (!connector || !detector) return;
  connector.failoverDetector = null;
  if (!detector.isDisconnected) detector.cleanup();
}

/** Reconnects `redis` (asking the Sentinels again) when it is not on the master they name now. */
async function leaveReplacedMaster(redis: Redis): Promise<void> {
  const master = await masterNamedBySentinels(redis.options);
  const stream = redis.status === 'ready' ? redis.stream : undefined;
  // A master named by hostname cannot be compared with the socket's address: left to the detector.
  if (!master || !isIP(master.host) || !stream?.remotePort) return;
  const host = stream.remoteAddress?.replace(/^::ffff:/, '');
  if (master.port !== stream.remotePort || master.host !== host) redis.disconnect(true);
}

/**
 * ioredis Cluster options for `options` (a connection's kind): `lazyConnect` and the
 * offline queue apply to the Cluster as a whole, everything else to each node's
 * connection (`redisOptions`, where BullMQ looks for `maxRetriesPerRequest: null`).
 */
export function clusterOptions(
  target: ClusterSettings,
  options: RedisOptions,
  waitsOutFailover = false,
): ClusterOptions {
  const { lazyConnect, enableOfflineQueue, ...perNode } = options;
  return {
    lazyConnect: lazyConnect ?? false,
    enableOfflineQueue: enableOfflineQueue ?? true,
    redisOptions: {
      ...perNode,
      ...(target.username ? { username: target.username } : {}),
      ...(target.password ? { password: target.password } : {}),
      ...(target.tls ? { tls: { ...target.tls } } : {}),
    },
    // A failover or a resharding moves slots: follow MOVED/ASK and retry while the map settles.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 200,
    // Each of those retries spends one redirection. ioredis's 16 (about 3 s) end before a failover
    // does (cluster-node-timeout, 15 s by default, then the election): see PATIENT_REDIRECTIONS.
    maxRedirections: waitsOutFailover ? PATIENT_REDIRECTIONS : IMPATIENT_REDIRECTIONS,
  };
}

/** ioredis's own redirection limit (about 3 s of retries). */
const IMPATIENT_REDIRECTIONS = 16;

/**
 * Redirections a command of a worker's bus connection may take on a Cluster: at 200–300 ms each,
 * about 5 minutes, so a turn's own commands wait out a failover as they wait out a restart of one
 * server, instead of failing the turn. Only that connection: BullMQ's workers' connections keep
 * ioredis's 16. A BullMQ command that fails in a failover costs a redo at most, while a patient
 * one held the worker's fetch loop, and with it `Worker.close()`, for minutes: after a few
 * failovers a stopping worker or gateway waited out every consumer's 60 s shutdown time-out.
 */
const PATIENT_REDIRECTIONS = 1_200;

/**
 * A new (unconnected unless `options` say otherwise) ioredis client for `target`.
 *
 * On a Cluster this is an ioredis `Cluster`, handed on as the `Redis` it speaks for:
 * both share ioredis's command interface, BullMQ takes either (it duplicates a Cluster
 * for its blocking connections), and the calls that differ — SCAN ({@link scanKeys}),
 * which node a connection reached ({@link describeTarget}) — check {@link isCluster}.
 * `waitsOutFailover`: on a Cluster, commands wait out a failover ({@link PATIENT_REDIRECTIONS}).
 */
export function newRedis(target: RedisTarget, options: RedisOptions, waitsOutFailover = false): Redis {
  if (target.kind === 'server')
    return endsWhenDisconnected(
      new Redis(target.url, target.tls ? { ...options, tls: { ...target.tls } } : options),
    );
  if (target.kind === 'sentinel')
    return endsWhenDisconnected(followMaster(new Redis({ ...options, ...sentinelOptions(target) })));
  const nodes = target.nodes.map(({ host, port }) => ({ host, port }));
  return endsWhenDisconnected(
    new Cluster(nodes, clusterOptions(target, options, waitsOutFailover)),
  ) as unknown as Redis;
}

/**
 * Ends a connection that `disconnect()` closes between two attempts to reconnect.
 *
 * ioredis (6.0) ends a connection from its socket's close event. While it waits to reconnect
 * there is no socket: `disconnect()` only cancels the next attempt, so the connection never
 * says 'end' and the commands waiting for it never settle (ioredis PR #2169, not released);
 * a Cluster that lost every node likewise waited for an empty pool and stayed
 * 'disconnecting', between attempts and as an attempt starts ({@link emptyCluster}).
 * BullMQ's `Worker.close()` waits for its blocking connection's 'end': a worker closed in
 * the second or two after Redis came back, before that connection's next attempt, hung for
 * its whole shutdown time-out (the cli-durable test's clean-up, now and then in `.ci/run`).
 * Here it ends as ioredis ends a connection closed on purpose: status 'end', its waiting
 * commands refused. Its duplicates (BullMQ's blocking connections) too.
 */
function endsWhenDisconnected<T extends Redis | Cluster>(client: T): T {
  if (client instanceof Cluster) {
    staysEnded(client);
    connectSettles(client);
  }
  const disconnect = client.disconnect.bind(client);
  client.disconnect = (reconnect = false) => {
    const nothingToClose = !reconnect && (client.status === 'reconnecting' || emptyCluster(client));
    disconnect(reconnect);
    if (nothingToClose) endNow(client);
  };
  const duplicate = client.duplicate.bind(client) as (...args: unknown[]) => T;
  (client as unknown as { duplicate: (...args: unknown[]) => T }).duplicate = (...args) =>
    endsWhenDisconnected(duplicate(...args));
  return client;
}

/**
 * Keeps an ended Cluster ended. ioredis sets a Cluster's status to 'close' each time its node
 * pool drains, and a pool emptied by `disconnect()` drains again as each node's connection ends:
 * a node that ends after the Cluster has (a slow node; its socket is destroyed 2 s later) put a
 * closed-on-purpose Cluster back to 'close', where it stays, with no reconnect planned. Whoever
 * then waits for it to be ready or end waits for good: BullMQ's reconnect of its blocking
 * connection, which held `Worker.close()` after Cluster failovers until magpie's close grace.
 * Only `connect()` leaves 'end' now, through 'connecting'.
 */
function staysEnded(cluster: Cluster): void {
  const internals = cluster as unknown as { setStatus(status: string, arg?: unknown): void };
  const setStatus = internals.setStatus.bind(cluster);
  internals.setStatus = (status, arg) => {
    if (status === 'close' && cluster.status === 'end') return;
    setStatus(status, arg);
  };
}

/**
 * Settles a Cluster's `connect()` when the Cluster is ready or has ended, whichever way it got
 * there. ioredis leaves the promise pending for good when the ready check after the slot refresh
 * fails (CLUSTER INFO says the cluster is down, as in a failover): it reconnects on its own, and
 * a later success or end resolves a new attempt's promise, not this one. BullMQ reconnects its
 * blocking connection with `connect()` and waits for it; pending, it held that worker's
 * `close()` after Cluster failovers until magpie's close grace dropped the connections.
 */
function connectSettles(cluster: Cluster): void {
  const connect = cluster.connect.bind(cluster);
  cluster.connect = () =>
    new Promise<void>((resolve, reject) => {
      const settle = (error?: Error) => {
        cluster.off('ready', onReady);
        cluster.off('end', onEnd);
        if (error) reject(error);
        else resolve();
      };
      // ioredis emits a status on the next tick: an 'end' or 'ready' of the connection before
      // this attempt (BullMQ disconnects and connects in one go) arrives when the status has
      // moved on, and is not this attempt's.
      const onReady = () => {
        if (cluster.status === 'ready') settle();
      };
      const onEnd = () => {
        if (cluster.status === 'end') settle(new Error('Connection is closed.'));
      };
      cluster.on('ready', onReady);
      cluster.on('end', onEnd);
      connect().then(() => settle(), settle);
    });
}

/**
 * A Cluster whose node pool is empty while it is neither waiting for its first connect nor ended:
 * its `disconnect()` empties the pool, and the last node's end is what ends the Cluster, so none
 * comes. So while it connects again after losing every node: the pool is filled only once the
 * startup nodes are resolved, a moment after 'connecting'.
 */
function emptyCluster(client: Redis | Cluster): boolean {
  return (
    client instanceof Cluster &&
    client.status !== 'wait' &&
    client.status !== 'end' &&
    client.nodes().length === 0
  );
}

/** What ioredis does when a connection closed on purpose has closed (its close handlers). */
function endNow(client: Redis | Cluster): void {
  if (client instanceof Cluster) {
    const cluster = client as unknown as { setStatus(status: string): void; handleCloseEvent(): void };
    cluster.setStatus('close');
    cluster.handleCloseEvent();
    return;
  }
  const redis = client as unknown as { setStatus(status: string): void; flushQueue(error: Error): void };
  redis.setStatus('end');
  redis.flushQueue(new Error('Connection is closed.'));
}

/**
 * The connection a command for `slotKey` goes out on: `redis` itself, or on a Cluster the node
 * connection of the master its slot map names for that key's slot (undefined while the map names
 * none, e.g. mid-failover). For what the Cluster client cannot route by a key: WAIT
 * (replica-wait.ts), and PUBLISH, which it sends to any node, from where it reaches the others
 * over the Cluster's own links: two publishes sent to two nodes may arrive in either order.
 */
export function slotConnection(redis: Redis, slotKey: string): Redis | undefined {
  if (!isCluster(redis)) return redis;
  const cluster = redis as unknown as Cluster;
  const master = cluster.slots[calculateSlot(slotKey)]?.[0];
  if (master === undefined) return undefined;
  return cluster.nodes('master').find((node) => `${node.options.host}:${node.options.port}` === master);
}

/**
 * Calls `listener` each time a subscriber connection is subscribed again after a break: its
 * 'ready' on one server or Sentinel. An ioredis Cluster does not reliably emit that for pub/sub:
 * it moves its subscriptions to a new connection to a random node (when that connection ends,
 * or the node map changes, as in a failover) and stays 'ready' itself, so what was published
 * meanwhile was missed unnoticed. There the listener runs when the new connection is ready
 * (ioredis's private `ClusterSubscriber.selectSubscriber`; a Cluster without it is refused here,
 * and test/integration/cluster/reply-watcher.test.ts covers the catch-up).
 *
 * @example onResubscribed(subscriber, () => void catchUp());
 */
export function onResubscribed(subscriber: Redis, listener: () => void): void {
  if (!isCluster(subscriber)) {
    subscriber.on('ready', listener);
    return;
  }
  const pubsub = (subscriber as unknown as { subscriber?: ClusterPubSub }).subscriber;
  if (typeof pubsub?.selectSubscriber !== 'function')
    throw new TypeError(
      'an ioredis Cluster without the ClusterSubscriber magpie follows (an ioredis upgrade?)',
    );
  const select = pubsub.selectSubscriber.bind(pubsub);
  pubsub.selectSubscriber = () => {
    select();
    pubsub.subscriber?.once('ready', listener);
  };
}

/** The part of ioredis's private ClusterSubscriber that {@link onResubscribed} follows. */
interface ClusterPubSub {
  selectSubscriber(): void;
  subscriber: Redis | null;
}

/** Whether `redis` is an ioredis Cluster (made by {@link newRedis} for a Cluster target). */
export function isCluster(redis: Redis): boolean {
  return (redis as unknown as { isCluster?: boolean }).isCluster === true;
}

/**
 * Every key matching `pattern`, by SCAN. On a Cluster SCAN reads one node, so each
 * master is scanned (magpie's keys all sit on one of them, under the hash tag).
 *
 * @example for (const key of await scanKeys(redis, `${prefix}:running:*`)) …
 */
export async function scanKeys(redis: Redis, pattern: string, count = 500): Promise<string[]> {
  const nodes = isCluster(redis) ? (redis as unknown as Cluster).nodes('master') : [redis];
  const found: string[] = [];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', count);
      found.push(...batch);
      cursor = next;
    } while (cursor !== '0');
  }
  return [...new Set(found)];
}

/**
 * How `target` is shown (no password): the URL with `***`, the Sentinels and
 * the master's name, with the master `connected` currently talks to, or a
 * Cluster's masters as `connected` knows them (else the nodes configured).
 *
 * @example describeTarget(target, redis) // 'sentinel mymaster at 10.0.0.2:6379 (sentinels 10.0.0.1:26379,…)'
 * @example describeTarget(target, redis) // 'cluster of 3 masters 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379'
 */
export function describeTarget(target: RedisTarget, connected?: Redis): string {
  if (target.kind === 'server') return displayUrl(target.url);
  if (target.kind === 'cluster') return describeCluster(target, connected);
  const sentinels = target.sentinels.map((s) => `${s.host}:${s.port}`).join(',');
  const stream = connected?.status === 'ready' ? connected.stream : undefined;
  const master = stream?.remoteAddress ? ` at ${stream.remoteAddress}:${stream.remotePort}` : '';
  return `sentinel ${target.name}${master} (sentinels ${sentinels})`;
}

function describeCluster(target: ClusterSettings, connected: Redis | undefined): string {
  const configured = target.nodes.map((n) => `${n.host}:${n.port}`).join(',');
  if (!connected || !isCluster(connected) || connected.status !== 'ready')
    return `cluster (nodes ${configured})`;
  const masters = (connected as unknown as Cluster)
    .nodes('master')
    .map((n) => `${n.options.host}:${n.options.port}`)
    .sort();
  return `cluster of ${masters.length} master${masters.length === 1 ? '' : 's'} ${masters.join(',')}`;
}

/**
 * A Redis connection as the rest of magpie holds it: a handle made here and
 * passed back to the bus's functions (stores, read models); only `src/bus`
 * sends commands on it.
 */
export type RedisConnection = Redis;

/** The certificate a TLS connection's server showed: when it stops being valid, and whom it names. */
export interface ServerCertificate {
  validTo: Date;
  /** Its subject's common name, or its first subject alternative name. */
  name: string;
}

/**
 * The certificate Redis showed `redis` (on a Cluster, the first master's node connection), or
 * undefined for a connection without TLS or not connected.
 */
export function serverCertificate(redis: Redis): ServerCertificate | undefined {
  const stream = isCluster(redis) ? (redis as unknown as Cluster).nodes('master')[0]?.stream : redis.stream;
  if (!(stream instanceof TLSSocket)) return undefined;
  const peer = stream.getPeerCertificate();
  if (!peer?.valid_to) return undefined;
  const name = peer.subject?.CN ?? peer.subjectaltname?.split(',')[0]?.trim() ?? '?';
  return { validTo: new Date(peer.valid_to), name: String(name) };
}

/** The version of the Redis server (from INFO), or undefined when it does not say. */
export async function redisVersion(redis: Redis): Promise<string | undefined> {
  return /redis_version:(\S+)/.exec(await redis.info('server'))?.[1];
}

/** What `magpie doctor` checks of a Redis server (INFO, and CONFIG GET save where allowed). */
export interface RedisServerInfo {
  version: string | undefined;
  maxmemoryPolicy: string | undefined;
  /** appendonly is on. */
  aof: boolean;
  /** The `save` setting; undefined when CONFIG is forbidden (managed Redis often forbids it). */
  save: string | undefined;
  /** Replicas connected to it (INFO replication's connected_slaves); on a Cluster, the fewest any master has. */
  replicas: number;
}

/**
 * Reads the server's version, eviction policy and persistence settings. On a Cluster
 * every master is read and the first that evicts or keeps nothing speaks for all
 * (a failover may put magpie's slot on any of them), else the first master.
 */
export async function redisServerInfo(redis: Redis): Promise<RedisServerInfo> {
  if (!isCluster(redis)) return nodeServerInfo(redis);
  const masters = await Promise.all((redis as unknown as Cluster).nodes('master').map(nodeServerInfo));
  const weak = masters.find((m) => m.maxmemoryPolicy !== 'noeviction' || (!m.aof && !m.save));
  const first = masters[0];
  if (!first) throw new TypeError('the Cluster named no masters');
  // MAGPIE_REDIS_MIN_REPLICAS counts the replicas of the master serving magpie's slot, which may be any.
  return { ...(weak ?? first), replicas: Math.min(...masters.map((m) => m.replicas)) };
}

async function nodeServerInfo(redis: Redis): Promise<RedisServerInfo> {
  const info = await redis.info();
  const field = (name: string) => new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
  let save: string | undefined;
  try {
    save = ((await redis.call('CONFIG', 'GET', 'save')) as string[])[1];
  } catch (_err) {
    save = undefined; // CONFIG forbidden: INFO decided what it could
  }
  return {
    version: field('redis_version'),
    maxmemoryPolicy: field('maxmemory_policy'),
    aof: field('aof_enabled') === '1',
    save,
    replicas: Number(field('connected_slaves') ?? 0),
  };
}

/** How long a producer waits for a connection before giving up. */
export const PRODUCER_CONNECT_TIMEOUT_MS = 5_000;

/** What {@link connectProducer} gives ioredis beyond its connect timeout (a socket's) before it stops waiting. */
const CONNECT_DEADLINE_SLACK_MS = 1_000;

/** Options for a producer: no offline queue, one retry per command, a short connect timeout. */
export function producerOptions(): RedisOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: PRODUCER_CONNECT_TIMEOUT_MS,
    lazyConnect: true,
  };
}

/** Options for a BullMQ worker (or subscriber): commands wait for Redis to come back. */
export function workerOptions(): RedisOptions {
  return { maxRetriesPerRequest: null, enableOfflineQueue: true };
}

/** A URL safe to print: the password is replaced. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<invalid url>';
  }
}

/**
 * The error every command reports when Redis cannot be reached (exit 3). `firstNode`: why the
 * first Sentinel or Cluster node refused a connection of its own, when the Sentinel or Cluster
 * client said only that none answered.
 */
export function redisUnavailable(
  target: RedisTarget | string,
  cause?: unknown,
  firstNode?: { address: string; error: Error },
): AppError {
  const reason = cause instanceof Error ? `: ${errorText(cause)}` : '';
  const where = typeof target === 'string' ? displayUrl(target) : describeTarget(target);
  const why = firstNode?.error ?? cause;
  const hint = why instanceof Error ? tlsHint(why, usesTls(target)) : '';
  const detail = firstNode ? ` (${firstNode.address}: ${errorText(firstNode.error)})` : '';
  return new AppError('REDIS_UNAVAILABLE', `Redis at ${where} is unreachable${reason}${detail}${hint}`, {
    cause,
    transient: true,
    exitCode: ExitCode.unavailable,
  });
}

/** An error's first line; OpenSSL's carry its internals (`405D…:error:0A00045C:SSL routines:…`), whose `reason` is the words. */
function errorText(error: Error): string {
  const { code, reason } = error as { code?: unknown; reason?: unknown };
  const fromOpenssl = typeof code === 'string' && code.startsWith('ERR_SSL_') && typeof reason === 'string';
  return (fromOpenssl ? reason : error.message).split('\n')[0]!;
}

/** Whether connections to `target` use TLS (a `rediss://` URL, or REDIS_TLS settings for Sentinel and Cluster). */
function usesTls(target: RedisTarget | string): boolean {
  if (typeof target === 'string') return target.startsWith('rediss:');
  if (target.kind === 'server') return target.url.startsWith('rediss:');
  return target.tls !== undefined;
}

/** Certificate checks that fail because the chain does not lead to a CA the client trusts. */
const UNTRUSTED_CERTIFICATE = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
]);

/**
 * What to do about a TLS failure, as a clause after the error: a certificate not signed by a
 * trusted CA, one for another host or out of date, a handshake the server closed (a Redis that
 * asks for a client certificate) or never answered (no TLS on that port), and a plain connection
 * a TLS port closed. Empty for other errors.
 */
function tlsHint(cause: Error, tls: boolean): string {
  const code = (cause as NodeJS.ErrnoException).code ?? '';
  if (UNTRUSTED_CERTIFICATE.has(code))
    return ' (its certificate is not signed by a CA magpie trusts: REDIS_TLS_CA names the PEM file of the CA that signed it)';
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return ' (its certificate is for another host: connect by a name or address it lists, or name one in REDIS_TLS_SERVERNAME)';
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID')
    return " (its certificate is out of date: renew the server's certificate)";
  if (
    code === 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED' ||
    code === 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE'
  )
    return ' (it asks for a client certificate: REDIS_TLS_CERT and REDIS_TLS_KEY name its PEM files)';
  if (code === 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA' || code === 'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE')
    return " (it refused magpie's client certificate: REDIS_TLS_CERT must be signed by a CA its tls-ca-cert-file holds)";
  if (tls && (code === 'ECONNRESET' || code === 'EPIPE'))
    return ' (it closed the TLS handshake: a Redis with tls-auth-clients yes asks for a client certificate, REDIS_TLS_CERT and REDIS_TLS_KEY)';
  if (tls && code === 'ETIMEDOUT')
    return ' (no TLS handshake: does it serve TLS on that port? a plain one takes redis://)';
  if (!tls && (code === 'ECONNRESET' || code === 'EPIPE'))
    return ' (if it serves TLS on that port, the URL must be rediss://)';
  return '';
}

/**
 * The reason a connection attempt failed: ioredis rejects `connect()` with "Connection is
 * closed." when the socket closed after an error it emitted (a refused certificate, a reset),
 * and that error is the one to tell.
 */
function failureOf(rejection: unknown, lastError: Error | undefined): unknown {
  const closed = rejection instanceof Error && rejection.message === 'Connection is closed.';
  const failure = closed && lastError ? lastError : rejection;
  // ioredis's "All sentinels are unreachable. Retrying from scratch after 1000ms. Last error: …":
  // this command does not retry, and the last error is often only "Connection is closed.".
  const sentinels =
    failure instanceof Error
      ? /^All sentinels are unreachable\b.*?(?: Last error: (.*))?$/.exec(failure.message)
      : null;
  if (!sentinels) return failure;
  const last = sentinels[1];
  return new Error(
    `no Sentinel answered${last && last !== 'Connection is closed.' ? ` (the last: ${last})` : ''}`,
  );
}

/**
 * Why the first Sentinel (or Cluster node) of `target` refuses a plain connection of its own,
 * with `target`'s credentials and TLS: undefined when it answers, and for one server. A Sentinel
 * or Cluster client that finds none of them says only that ("All sentinels are unreachable …
 * Last error: Connection is closed.", "None of startup nodes is available"), not why: a
 * certificate refused, a password, a port with nothing behind it.
 */
async function firstNodeFailure(target: RedisTarget): Promise<{ address: string; error: Error } | undefined> {
  if (target.kind === 'server') return undefined;
  const node = target.kind === 'sentinel' ? target.sentinels[0] : target.nodes[0];
  if (!node) return undefined;
  const auth =
    target.kind === 'sentinel'
      ? { password: target.sentinelPassword }
      : { username: target.username, password: target.password };
  const probe = new Redis({
    host: node.host,
    port: node.port,
    ...auth,
    ...(target.tls ? { tls: { ...target.tls } } : {}),
    lazyConnect: true,
    connectTimeout: 2_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  let first: Error | undefined;
  probe.on('error', (err: Error) => {
    first ??= err;
  });
  try {
    await probe.connect();
    await probe.ping();
    return undefined;
  } catch (err) {
    return { address: `${node.host}:${node.port}`, error: first ?? (err as Error) };
  } finally {
    probe.disconnect();
  }
}

/**
 * Opens the bus's main connection and waits until it is ready. Rejects with
 * REDIS_UNAVAILABLE when Redis does not answer within the connect timeout.
 * A `patient` connection (workers) later waits for Redis to come back instead
 * of failing commands, so a Redis restart (or a Cluster's failover) does not use up turn attempts.
 */
export async function connectProducer(target: RedisTarget | string, patient = false): Promise<Redis> {
  const options = patient
    ? { ...workerOptions(), lazyConnect: true, connectTimeout: PRODUCER_CONNECT_TIMEOUT_MS }
    : producerOptions();
  const where = typeof target === 'string' ? serverTarget(target) : target;
  const redis = newRedis(where, options, patient);
  // Errors are surfaced through command rejections; keep ioredis from printing them.
  let lastError: Error | undefined;
  const remember = (err: Error) => {
    lastError = err;
  };
  redis.on('error', remember);
  const ready = (async () => {
    await redis.connect();
    await redis.ping();
  })();
  ready.catch(() => undefined); // settled after the deadline, if at all: nobody waits for it then
  // connectTimeout covers one socket; a Sentinel connection none of whose Sentinels answer retries
  // from scratch for good without settling connect(): the deadline is the producer's own.
  let deadline: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    deadline = setTimeout(
      () => reject(lastError ?? new Error(`no answer within ${PRODUCER_CONNECT_TIMEOUT_MS / 1000} s`)),
      PRODUCER_CONNECT_TIMEOUT_MS + CONNECT_DEADLINE_SLACK_MS,
    );
  });
  try {
    await Promise.race([ready, late]);
    redis.off('error', remember);
    redis.on('error', () => undefined);
    return redis;
  } catch (err) {
    redis.disconnect();
    throw redisUnavailable(where, failureOf(err, lastError), await firstNodeFailure(where));
  } finally {
    clearTimeout(deadline);
  }
}

/** A connection for BullMQ workers and pub/sub subscribers. */
export function createWorkerRedis(target: RedisTarget): Redis {
  const redis = newRedis(target, workerOptions());
  redis.on('error', () => undefined);
  return redis;
}

/**
 * A BullMQ consumer's connection. On a Cluster its own commands (taking a job, and moving it
 * when done: finished, retried, postponed) wait out a failover as the bus connection's do, while
 * its duplicates (BullMQ's blocking connection, whose BZPOPMIN waits for the next job) give up
 * after ioredis's 16 redirections: a BZPOPMIN retried through failovers held the consumer's close
 * (every consumer of a stopping worker waited out its close grace) and the fetch loop with it.
 */
export function createConsumerRedis(target: RedisTarget): Redis {
  if (target.kind !== 'cluster') return createWorkerRedis(target);
  const redis = newRedis(target, workerOptions(), true);
  redis.on('error', () => undefined);
  const cluster = redis as unknown as { duplicate(nodes?: unknown[], options?: ClusterOptions): Cluster };
  const duplicate = cluster.duplicate.bind(cluster);
  cluster.duplicate = (nodes = [], options = {}) =>
    duplicate(nodes, { ...options, maxRedirections: IMPATIENT_REDIRECTIONS });
  return redis;
}

/**
 * Runs `work` on a short-lived connection to `url` that gives up quickly (1 s
 * to connect, no retries, no reconnecting) and is closed afterwards. A refused
 * or failed connection rejects; it is not also reported as an 'error' event.
 *
 * @example const pong = await withQuickConnection(url, (redis) => redis.ping());
 */
export async function withQuickConnection<T>(url: string, work: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // Every failure also rejects connect() or the command that met it, which is where it is handled.
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}

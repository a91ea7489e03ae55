/**
 * The bus: durable per-session mailboxes plus BullMQ queues on Redis.
 * publishInbound appends to the session's mailbox and adds a turn job
 * deduplicated per session (at most one turn per session runs anywhere);
 * publishOutbound queues a reply on `outbound-<channel>` under a
 * deterministic job id (a redone turn cannot post twice).
 */
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { z } from 'zod';
import type { Config } from '../config/index.js';
import { AppError, describeError } from '../errors/index.js';
import { runAll } from '../lifecycle/run-all.js';
import type { Logger } from '../log/index.js';
import type { AnswerOutcome, ApprovalAnswer, PendingApproval } from '../messages/approval.js';
import type { LiveUpdate } from '../messages/live-update.js';
import {
  type InboundMessage,
  type InboundMessageInput,
  InboundMessageSchema,
  type OutboundMessage,
  type OutboundMessageInput,
  OutboundMessageSchema,
  sessionKeyOf,
} from '../messages/messages.js';
import { shortHash } from '../messages/short-hash.js';
import { NO_TRACING, type Tracing, traceOf, withTrace } from '../telemetry/tracing.js';
import { type ActivityEvent, publishActivity, subscribeActivity } from './activity.js';
import { RedisApprovals } from './approvals.js';
import { CLOSE_TIMEOUT_MS, closedWithin } from './bounded-close.js';
import { RedisBudgetStore } from './budget-store.js';
import { publishCancel, subscribeCancel } from './cancel.js';
import { Consumer, type ConsumerTuning, type JobProcessor } from './consumer.js';
import { RedisCooldownStore } from './cooldown-store.js';
import { CronStore } from './cron-store.js';
import type { DeadHolders } from './dead-holders.js';
import { RedisEmailStore } from './email-store.js';
import { RedisHelperTracker } from './helper-records.js';
import { publishLive, subscribeLive } from './live.js';
import { RedisLiveRecords } from './live-records.js';
import { resolveRedisTarget } from './local-redis.js';
import { adoptOlderMailboxes, Mailbox, pendingSessions } from './mailbox.js';
import { Markers } from './markers.js';
import { RedisMatrixStore } from './matrix-store.js';
import { RedisModelChoiceStore } from './model-choice-store.js';
import { RedisOpsReader } from './ops-reader.js';
import { type ChatOrder, enterLane, OutboundLanes } from './outbound-order.js';
import { RedisPairingStore } from './pairing-store.js';
import {
  APPROVAL_TIMEOUT_QUEUE,
  INBOUND_QUEUE,
  outboundJobOptions,
  outboundQueueName,
  type TurnJobTuning,
  turnJobOptions,
} from './queues.js';
import {
  connectProducer,
  createConsumerRedis,
  createWorkerRedis,
  describeTarget,
  type RedisTarget,
  redisUnavailable,
  serverTarget,
  slotConnection,
} from './redis.js';
import { type ReplicaWait, replicated } from './replica-wait.js';
import { pushReply, ReplyWatcher, readReplies } from './reply-lists.js';
import { RedisRunningTurns } from './running-turns.js';
import { RedisStateStore } from './state.js';
import { Subscriber } from './subscriber.js';
import { TurnFence } from './turn-fence.js';
import { TurnRecorder, type TurnRecorderOptions } from './turn-recorder.js';
import { keepWebAudio, readWebAudio } from './web-audio.js';
import {
  type DeliveredWebEvent,
  lastWebEventId,
  publishWebSignal,
  pushWebEvent,
  readWebEvents,
  subscribeWebEvents,
  type WebEventBus,
  type WebMessageEvent,
  type WebSignal,
} from './web-events.js';
import { RedisWhatsAppStore } from './whatsapp-store.js';
import { WorkerHeartbeat, type WorkerHeartbeatOptions } from './worker-beats.js';
import { claimWorkspace } from './workspace-record.js';

export interface BusConnectOptions {
  config: Config;
  logger: Logger;
  /** Overrides the Redis resolution (Sentinel, REDIS_URL, then the private local redis-server) with one server. */
  url?: string;
  /** Attempts and backoff of turn jobs (defaults in {@link TurnJobTuning}). */
  turnJobs?: TurnJobTuning;
  /**
   * Commands wait for Redis to come back instead of failing fast. For workers;
   * channels keep the default so a publish fails at once when Redis is away.
   * @defaultValue false
   */
  patient?: boolean;
  /** Spans for each publish, whose context the message carries on (`metadata.trace`). @defaultValue off */
  tracing?: Tracing;
  /** Where this process records its consumers, so this host hands their jobs back if it dies (dead-holders.ts). */
  deadHolders?: DeadHolders;
}

/** The turn job's payload: only the session; the messages wait in the mailbox. */
export interface TurnJobData {
  sessionKey: string;
}

/**
 * The bus's producer side and its stores. Implements the channels' `ChannelBus`
 * port (channels/types.ts) structurally: the bus imports no higher layer.
 */
export class Bus implements WebEventBus {
  readonly prefix: string;
  /** The shared connection (fails fast unless the bus is patient). */
  readonly redis: Redis;
  /** Where Redis is: one server, or the master Sentinel names (followed through failovers). */
  readonly target: RedisTarget;
  /** "Already done" markers and locks of redone jobs (helpers, scheduled tasks, the heartbeat). */
  readonly markers: Markers;
  /** Each session's running-turn record. */
  readonly runningTurns: RedisRunningTurns;
  /** Which attempt of each session's turn may answer it. */
  readonly turnFence: TurnFence;
  private readonly deadHolders: DeadHolders | undefined;
  /** What each channel showed of turns' live replies. */
  readonly liveRecords: RedisLiveRecords;
  /** The operations view's reads (status, dashboard, `/metrics`). */
  readonly opsReader: RedisOpsReader;
  /** Approval questions and each chat's "always allow" rules. */
  readonly approvals: RedisApprovals;
  /** The process's tracing (off unless OTEL_* turned it on). */
  readonly tracing: Tracing;
  private readonly logger: Logger;
  private readonly turnJobs: TurnJobTuning;
  private readonly replicas: ReplicaWait;
  private readonly queues = new Map<string, Queue>();
  private subscriber: Subscriber | undefined;
  private replyWatcher: ReplyWatcher | undefined;
  private closing: Promise<void> | undefined;

  private constructor(redis: Redis, target: RedisTarget, options: BusConnectOptions) {
    this.redis = redis;
    this.target = target;
    this.replicas = {
      min: options.config.redis.minReplicas,
      timeoutMs: options.config.redis.waitTimeoutMs,
      slotKey: options.config.redis.prefix,
    };
    this.prefix = options.config.redis.prefix;
    this.markers = new Markers(redis);
    this.runningTurns = new RedisRunningTurns(redis, this.prefix);
    this.liveRecords = new RedisLiveRecords(redis, this.prefix);
    this.opsReader = new RedisOpsReader(redis, this.prefix);
    this.approvals = new RedisApprovals(redis, this.prefix);
    this.logger = options.logger.child({ component: 'bus' });
    this.turnFence = new TurnFence(redis, this.prefix, {
      onLeaseOutlived: (session, attempt) =>
        this.logger.warn(
          { session, attempt },
          "a session write outlasted its turn's write lease: a later attempt may have read the session without it",
        ),
    });
    this.tracing = options.tracing ?? NO_TRACING;
    this.turnJobs = options.turnJobs ?? {};
    this.deadHolders = options.deadHolders;
  }

  /** Connects to Redis (failing fast with REDIS_UNAVAILABLE, exit 3). */
  /** Where a gateway's inbound goes when several agents share it; absent: here. */
  #router: InboundRouter | undefined;

  /**
   * Sends every inbound message to its agent's bus, and `/stop` and approval answers to
   * every agent's (src/agents: the gateway of several agents). The buses `router` returns
   * must have no router of their own.
   */
  routeInbound(router: InboundRouter): void {
    this.#router = router;
  }

  static async connect(options: BusConnectOptions): Promise<Bus> {
    const target = options.url ? serverTarget(options.url) : await resolveRedisTarget(options.config);
    const redis = await connectProducer(target, options.patient ?? false);
    return new Bus(redis, target, options);
  }

  /**
   * The server's URL (with its password: connect with it, print it through `displayUrl`);
   * with Sentinel or a Cluster, {@link describe}'s text.
   */
  get url(): string {
    return this.target.kind === 'server' ? this.target.url : this.describe();
  }

  /** Where Redis is, printable: the URL without its password, the Sentinels and the master now in use, or a Cluster's masters. */
  describe(): string {
    return describeTarget(this.target, this.redis);
  }

  /** A new connection for a subscriber or a blocking reader (`maxRetriesPerRequest: null`). */
  createWorkerConnection(): Redis {
    return createWorkerRedis(this.target);
  }

  /** A new connection for a BullMQ worker: on a Cluster its job moves wait out a failover (see {@link createConsumerRedis}). */
  createConsumerConnection(): Redis {
    return createConsumerRedis(this.target);
  }

  /** The mailbox of a session. */
  mailbox(sessionKey: string): Mailbox {
    return new Mailbox(this.redis, this.prefix, sessionKey, this.logger);
  }

  /**
   * Validates and durably queues an inbound message: mailbox RPUSH, then a
   * turn job deduplicated by session. Commands are not read here: the
   * channels' intake routes them (src/channels/intake.ts) before publishing.
   */
  async publishInbound(input: InboundMessageInput): Promise<void> {
    const message = parseInbound(input);
    // Several agents: the message goes to its agent's bus (which has no router of its own).
    const target = this.#router?.busFor(message);
    if (target && target !== this) return target.publishInbound(message);
    const sessionKey = sessionKeyOf(message);
    // The receipt: a span starting the turn's trace (or continuing a helper's), carried in the message.
    const span = this.tracing.start(`publish ${INBOUND_QUEUE}`, {
      kind: 'producer',
      parent: traceOf(message.metadata),
      attributes: {
        'messaging.system': 'bullmq',
        'messaging.operation.type': 'send',
        'messaging.destination.name': INBOUND_QUEUE,
        'magpie.channel': message.channel,
      },
    });
    const traced = { ...message, metadata: withTrace(message.metadata, span) };
    try {
      await this.#queueInbound(traced, sessionKey);
    } catch (err) {
      span.fail(hasCodeOf(err));
      throw err;
    } finally {
      span.end();
    }
  }

  async #queueInbound(message: InboundMessage, sessionKey: string): Promise<void> {
    await this.guard(() =>
      // Acknowledged means replicated: the platform is told "received" only once replicas hold both writes.
      replicated(this.redis, this.replicas, 'the inbound message', async () => {
        const added = await this.mailbox(sessionKey).push(message);
        if (!added)
          this.logger.info({ id: message.id, session: sessionKey }, 'message delivered again; taken once');
        // Added either way: a publish retried after its append went through but its job did not must still wake a worker.
        const data: TurnJobData = { sessionKey };
        await this.queue(INBOUND_QUEUE).add('turn', data, turnJobOptions(sessionKey, this.turnJobs));
      }),
    );
  }

  /**
   * Validates and queues an outbound message on `outbound-<channel>` with job
   * id = message id, behind the chat's earlier ones (its lane: outbound-order.ts).
   */
  async publishOutbound(input: OutboundMessageInput): Promise<void> {
    const parsed = parseOutbound(input);
    const queue = outboundQueueName(parsed.channel);
    const span = this.tracing.start(`publish ${queue}`, {
      kind: 'producer',
      parent: traceOf(parsed.metadata),
      attributes: {
        'messaging.system': 'bullmq',
        'messaging.operation.type': 'send',
        'messaging.destination.name': queue,
        'magpie.channel': parsed.channel,
        'magpie.message.kind': parsed.kind,
      },
    });
    const message = { ...parsed, metadata: withTrace(parsed.metadata, span) };
    try {
      await this.guard(() =>
        replicated(this.redis, this.replicas, 'the outbound message', async () => {
          // The lane first: a job is never sent before its chat knows its place.
          await enterLane(this.redis, this.prefix, message);
          await this.queue(queue).add('send', message, outboundJobOptions(message.id));
        }),
      );
    } catch (err) {
      span.fail(hasCodeOf(err));
      throw err;
    } finally {
      span.end();
    }
  }

  /** The per-chat order of `channel`'s outbound messages (its delivery's side). */
  outboundOrder(channel: string): ChatOrder {
    return new OutboundLanes(this.redis, this.prefix, channel, this.queue(outboundQueueName(channel)));
  }

  /** Whether outbound message `id` for `channel` is queued, or was sent within the jobs' keep time. */
  async outboundQueued(channel: string, id: string): Promise<boolean> {
    return this.guard(async () => (await this.queue(outboundQueueName(channel)).getJob(id)) !== undefined);
  }

  /**
   * `/stop`: aborts the session's running turn, or settles its waiting approval question as
   * cancelled (the parked turn then ends "Stopped."); true when there was either. Queued messages stay.
   */
  async cancel(sessionKey: string): Promise<boolean> {
    const router = this.#router;
    if (router) {
      // The session may be any agent's: each bus stops its own (a key no agent runs stops nothing).
      const stopped = await Promise.all(
        router.all().map((b) => (b === this ? this.#cancelHere(sessionKey) : b.cancel(sessionKey))),
      );
      return stopped.some(Boolean);
    }
    return this.#cancelHere(sessionKey);
  }

  async #cancelHere(sessionKey: string): Promise<boolean> {
    return this.guard(async () => {
      const running = await publishCancel(this.redis, this.prefix, sessionKey);
      const pending = await this.approvals.get(sessionKey);
      if (pending?.state !== 'waiting') return running;
      const found = await this.approvals.move(sessionKey, pending.code, 'waiting', 'cancelled', '/stop');
      if (found !== 'waiting') return running;
      await this.enqueueTurn(sessionKey);
      return true;
    });
  }

  /** Wakes a worker for the session (a settled question's turn goes on; waiting messages follow). */
  async enqueueTurn(sessionKey: string): Promise<void> {
    const data: TurnJobData = { sessionKey };
    await this.queue(INBOUND_QUEUE).add('turn', data, turnJobOptions(sessionKey, this.turnJobs));
  }

  /**
   * Wakes a worker for every session whose mailbox holds messages (the turn
   * worker's sweep): a turn job that failed for good, or one lost otherwise,
   * must not leave acknowledged messages waiting for the chat's next message.
   * Sessions that have a turn job already are untouched (the add is
   * deduplicated). Resolves to the number of sessions woken.
   */
  async wakePendingMailboxes(): Promise<number> {
    return this.guard(async () => {
      await adoptOlderMailboxes(this.redis, this.prefix);
      const sessions = await pendingSessions(this.redis, this.prefix);
      await Promise.all(sessions.map((sessionKey) => this.enqueueTurn(sessionKey)));
      return sessions.length;
    });
  }

  /**
   * An answer typed or pressed in the chat of `sessionKey`: settles its question once
   * (bus/approvals.ts) and, when it did, wakes a worker to go on with the turn.
   */
  async answerApproval(sessionKey: string, answer: ApprovalAnswer): Promise<AnswerOutcome> {
    const router = this.#router;
    if (router) {
      // The question is one agent's: the first bus that knows it answers.
      for (const b of router.all()) {
        const outcome = await (b === this
          ? this.#answerHere(sessionKey, answer)
          : b.answerApproval(sessionKey, answer));
        if (outcome.kind !== 'none') return outcome;
      }
      return { kind: 'none' };
    }
    return this.#answerHere(sessionKey, answer);
  }

  async #answerHere(sessionKey: string, answer: ApprovalAnswer): Promise<AnswerOutcome> {
    return this.guard(async () => {
      const outcome = await this.approvals.answer(sessionKey, answer);
      if (outcome.kind === 'decided') await this.enqueueTurn(sessionKey);
      return outcome;
    });
  }

  /** Stores a new question and schedules its time-out (a delayed job: it outlives every restart). */
  async parkApproval(pending: PendingApproval): Promise<void> {
    await this.guard(async () => {
      await this.approvals.park(pending);
      const delay = Math.max(0, Date.parse(pending.expiresAt) - Date.now());
      await this.queue(APPROVAL_TIMEOUT_QUEUE).add(
        'timeout',
        { sessionKey: pending.sessionKey, code: pending.code },
        {
          jobId: `timeout-${shortHash(`${pending.sessionKey}\0${pending.code}`, 24)}`,
          delay,
          attempts: 5,
          backoff: { type: 'exponential', delay: 1_000 },
          removeOnComplete: { age: 3_600 },
          removeOnFail: { age: 7 * 24 * 3_600 },
        },
      );
    });
  }

  /** The time-out of question `code`: settles it as timed out if it still waits, and wakes a worker. */
  async expireApproval(sessionKey: string, code: string): Promise<boolean> {
    const found = await this.approvals.move(sessionKey, code, 'waiting', 'timeout', 'timeout');
    if (found !== 'waiting') return false;
    await this.enqueueTurn(sessionKey);
    return true;
  }

  /** Called with the session key of every cancellation (workers). */
  async onCancel(handler: (sessionKey: string) => void): Promise<() => Promise<void>> {
    return subscribeCancel(this.sub(), this.prefix, handler);
  }

  /** Tells the gateway that a turn started or ended in a chat. */
  async publishActivity(channel: string, event: ActivityEvent): Promise<void> {
    await publishActivity(this.redis, this.prefix, channel, event);
  }

  /** Turn start/stop events of one channel (the gateway shows typing). Returns the unsubscribe. */
  async onActivity(
    channel: string,
    handler: (e: { chatId: string; threadId?: string; active: boolean }) => void,
  ): Promise<() => Promise<void>> {
    return subscribeActivity(this.sub(), this.prefix, channel, handler, this.logger);
  }

  /** Publishes a snapshot of a turn's answer being written (coalesced by the caller). */
  async publishLive(update: LiveUpdate): Promise<void> {
    await publishLive(this.redis, this.prefix, update);
  }

  /** Live reply snapshots of one channel (the gateway shows them). Returns the unsubscribe. */
  async onLive(channel: string, handler: (update: LiveUpdate) => void): Promise<() => Promise<void>> {
    return subscribeLive(this.sub(), this.prefix, channel, handler, this.logger);
  }

  /** The last user-facing chat (heartbeat replies go there). */
  stateStore(): RedisStateStore {
    return new RedisStateStore(this.redis, this.prefix);
  }

  /** Scheduled tasks of the `cron` tool (BullMQ job schedulers on this bus's connection). */
  cronStore(): CronStore {
    return new CronStore({ connection: this.redis, prefix: this.prefix });
  }

  /** Running helpers, for `magpie status`. */
  helperTracker(): RedisHelperTracker {
    return new RedisHelperTracker(this.redis, this.prefix);
  }

  /** Models' cool-downs after failures, shared by every worker. */
  cooldownStore(): RedisCooldownStore {
    return new RedisCooldownStore(this.redis, this.prefix);
  }

  /** Spending limits' counters, reservations and spend per day, shared by every worker. */
  budgetStore(): RedisBudgetStore {
    return new RedisBudgetStore(this.redis, this.prefix);
  }

  /** Each chat's `/model` choice. */
  modelChoiceStore(): RedisModelChoiceStore {
    return new RedisModelChoiceStore(this.redis, this.prefix);
  }

  /** Pairing codes and approved senders, shared by every gateway. */
  pairingStore(): RedisPairingStore {
    return new RedisPairingStore(this.redis, this.prefix);
  }

  /** The e-mail channel's mailbox cursors, threads and counts of ignored mail. */
  emailStore(): RedisEmailStore {
    return new RedisEmailStore(this.redis, this.prefix);
  }

  /** The Matrix channel's sync position, kept device and encrypted rooms told. */
  matrixStore(): RedisMatrixStore {
    return new RedisMatrixStore(this.redis, this.prefix);
  }

  /** The WhatsApp channel's record of the status callbacks about what it sent. */
  whatsappStore(): RedisWhatsAppStore {
    return new RedisWhatsAppStore(this.redis, this.prefix);
  }

  /** Per-turn figures and running turns of one worker, for status and the dashboard. */
  turnRecorder(options: Omit<TurnRecorderOptions, 'redis' | 'prefix'>): TurnRecorder {
    return new TurnRecorder({ ...options, redis: this.redis, prefix: this.prefix });
  }

  /** A worker's liveness key (`<prefix>:workers:<id>` with a TTL). */
  workerHeartbeat(options: Omit<WorkerHeartbeatOptions, 'redis' | 'prefix'>): WorkerHeartbeat {
    return new WorkerHeartbeat({ ...options, redis: this.redis, prefix: this.prefix });
  }

  /** Records `id` as the bus's workspace when none is; resolves to the recorded one. */
  claimWorkspace(id: string): Promise<string> {
    return claimWorkspace(this.redis, this.prefix, id);
  }

  /** Subscribes to a raw pub/sub channel under the prefix (`<prefix>:<name>`). */
  async subscribe(name: string, handler: (payload: string) => void): Promise<() => Promise<void>> {
    return this.sub().subscribe(`${this.prefix}:${name}`, handler);
  }

  /** Publishes on `<prefix>:<name>`; resolves to the number of receivers. */
  async publish(name: string, payload: string): Promise<number> {
    // On a Cluster through the master of magpie's slot, as the reply scripts' publishes go: one
    // node, so a chat's publishes reach every subscriber in the order they were made.
    const publisher = slotConnection(this.redis, this.prefix) ?? this.redis;
    return this.guard(() => publisher.publish(`${this.prefix}:${name}`, payload));
  }

  /**
   * Delivers a message to a CLI reply address: appended to its expiring reply
   * list and published, in one script call (reply-lists.ts). Resolves to the receivers.
   */
  async pushCliReply(address: string, payload: string): Promise<number> {
    // Its delivery is this write: lost in a failover after its job completed, it would never come.
    return this.guard(() =>
      replicated(this.redis, this.replicas, 'the CLI reply', () =>
        pushReply(this.redis, this.prefix, address, payload),
      ),
    );
  }

  /**
   * Calls `handler` with every message to a CLI reply address: as published,
   * and again from its reply list after each reconnect (so one may come twice:
   * tell them apart by id). Resolves once subscribed; returns the unwatch.
   */
  async watchCliReplies(address: string, handler: (payload: string) => void): Promise<() => Promise<void>> {
    this.replyWatcher ??= new ReplyWatcher({
      subscriber: this.createWorkerConnection(),
      reader: this.createWorkerConnection(),
      prefix: this.prefix,
      logger: this.logger,
    });
    return this.replyWatcher.watch(address, handler);
  }

  /** The messages in a reply address's list now (JSON strings, oldest first): what a new watcher should not take again. */
  async readCliReplies(address: string): Promise<string[]> {
    return this.guard(() => readReplies(this.redis, this.prefix, address));
  }

  /** Keeps a web chat message for pages that reconnect and publishes it (web-events.ts); resolves to its id. */
  async pushWebEvent(chat: string, event: WebMessageEvent): Promise<string> {
    // Kept for pages that reconnect: as with a CLI reply, lost after its job completed it never comes.
    return this.guard(() =>
      replicated(this.redis, this.replicas, 'the web chat message', () =>
        pushWebEvent(this.redis, this.prefix, chat, event),
      ),
    );
  }

  /** Publishes a live snapshot or typing to a web chat's open pages (not kept). */
  async publishWebSignal(chat: string, event: WebSignal): Promise<void> {
    await this.guard(() => publishWebSignal(this.redis, this.prefix, chat, event));
  }

  /** A web chat's kept messages after `afterId`, oldest first. */
  async readWebEvents(
    chat: string,
    afterId: string | undefined,
    count?: number,
  ): Promise<DeliveredWebEvent[]> {
    return this.guard(() => readWebEvents(this.redis, this.prefix, chat, afterId, count));
  }

  /** Keeps a web chat's spoken reply for its `<audio>` players (web-audio.ts). */
  async keepWebAudio(chat: string, id: string, bytes: Buffer): Promise<void> {
    await this.guard(() => keepWebAudio(this.redis, this.prefix, chat, id, bytes));
  }

  /** A web chat's kept spoken reply, or undefined. */
  async readWebAudio(chat: string, id: string): Promise<Buffer | undefined> {
    return this.guard(() => readWebAudio(this.redis, this.prefix, chat, id));
  }

  /** The id of a web chat's newest kept message. */
  async lastWebEventId(chat: string): Promise<string | undefined> {
    return this.guard(() => lastWebEventId(this.redis, this.prefix, chat));
  }

  /** Everything published to a web chat from now on; returns the unsubscribe. */
  async onWebEvents(
    chat: string,
    handler: (delivered: DeliveredWebEvent) => void,
  ): Promise<() => Promise<void>> {
    return subscribeWebEvents(this.sub(), this.prefix, chat, handler, this.logger);
  }

  /** Starts consuming a queue with its own worker connection. */
  consume(queue: string, processor: JobProcessor, tuning: ConsumerTuning = {}): Consumer {
    const consumer = new Consumer({
      ...tuning,
      queue,
      prefix: this.prefix,
      connection: this.createConsumerConnection(),
      processor,
      logger: this.logger,
    });
    this.deadHolders?.add({
      prefix: this.prefix,
      queue,
      worker: consumer.workerId,
      maxStalledCount: consumer.maxStalledCount,
    });
    return consumer;
  }

  /** Jobs of a queue in the given states (for draining and status). */
  async pendingJobs(
    queue: string,
    states: Array<'waiting' | 'active' | 'delayed' | 'prioritized'> = [
      'waiting',
      'active',
      'delayed',
      'prioritized',
    ],
  ): Promise<number> {
    const counts = await this.queue(queue).getJobCounts(...states);
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }

  /** Closes queues, subscriptions and the connection. Idempotent: the same promise every time. */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    for (const queue of this.queues.values()) {
      try {
        if (!(await closedWithin(queue.close(), CLOSE_TIMEOUT_MS)))
          this.logger.warn(
            { queue: queue.name, waitedMs: CLOSE_TIMEOUT_MS },
            'closing a queue took too long; dropped',
          );
      } catch (err) {
        this.logger.warn({ err: describeError(err), queue: queue.name }, 'closing a queue failed');
      }
    }
    await runAll([
      () => this.subscriber?.close(),
      () => this.replyWatcher?.close(),
      () => this.redis.disconnect(),
    ]);
  }

  private queue(name: string): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, { connection: this.redis, prefix: this.prefix });
      queue.on('error', (err) => this.logger.warn({ err: describeError(err), queue: name }, 'queue error'));
      this.queues.set(name, queue);
    }
    return queue;
  }

  private sub(): Subscriber {
    this.subscriber ??= new Subscriber(this.createWorkerConnection(), this.logger);
    return this.subscriber;
  }

  /** Runs a Redis operation; connection failures become REDIS_UNAVAILABLE (transient). */
  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw redisUnavailable(this.target, err);
    }
  }
}

/** Which bus takes a gateway's inbound message when several agents share the gateway. */
export interface InboundRouter {
  /** The bus of the message's agent (this bus for the default agent). */
  busFor(message: InboundMessage): Bus;
  /** Every agent's bus, this one included. */
  all(): readonly Bus[];
}

/**
 * Inbound metadata that outbound messages need for routing: every key of the
 * batch's metadata (later messages win) and all CLI reply addresses.
 */
export function routingMetadata(messages: InboundMessage[]): Record<string, unknown> {
  const metadata: Record<string, unknown> = {};
  const addresses: string[] = [];
  for (const m of messages) {
    Object.assign(metadata, m.metadata);
    const address = m.metadata.replyAddress;
    if (typeof address === 'string' && !addresses.includes(address)) addresses.push(address);
  }
  if (addresses.length > 0) metadata.replyAddresses = addresses;
  return metadata;
}

/** An error's code for a span's status (never its message, which may quote a payload). */
function hasCodeOf(err: unknown): string {
  return err instanceof AppError ? err.code : 'error';
}

function parseInbound(input: InboundMessageInput): InboundMessage {
  return parseMessage(InboundMessageSchema, 'inbound', input);
}

function parseOutbound(input: OutboundMessageInput): OutboundMessage {
  return parseMessage(OutboundMessageSchema, 'outbound', input);
}

/** Validates a message before it is queued; AppError INVALID_MESSAGE naming the first problem. */
function parseMessage<T>(schema: z.ZodType<T>, kind: string, input: unknown): T {
  const result = schema.safeParse(input);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new AppError(
      'INVALID_MESSAGE',
      `invalid ${kind} message: ${issue?.path.join('.')} ${issue?.message}`,
    );
  }
  return result.data;
}

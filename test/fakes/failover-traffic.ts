/**
 * The platform side of the failover tests (Sentinel and Cluster): chats that
 * publish one message after another through a Bus, each redelivered until
 * acknowledged as Telegram would, and every reply heard by its outbound id; then
 * the exactly-once check (one answer, one user entry in its session, per
 * acknowledged message).
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { Queue } from 'bullmq';
import { expect } from 'vitest';
import { closedWithin } from '../../src/bus/bounded-close.js';
import type { Bus } from '../../src/bus/bus.js';
import { keys } from '../../src/bus/keys.js';
import { laneKeys } from '../../src/bus/outbound-order.js';
import { INBOUND_QUEUE, outboundQueueName, turnDedupId } from '../../src/bus/queues.js';
import type { Config } from '../../src/config/index.js';
import { describeError } from '../../src/errors/index.js';
import { createLogger, type Logger } from '../../src/log/index.js';
import { roleConfig } from './config.js';
import type { FakeOpenAI } from './openai-server.js';
import { waitFor } from './wait-for.js';

/**
 * The Config of a failover test's magpie on `redisEnv` (Sentinel or Cluster variables), with
 * MAGPIE_REDIS_MIN_REPLICAS=1, its state folder under `root`, streaming off, and the per-minute
 * guard raised (four busy chats would meet its 30 per chat within the run).
 */
export function failoverConfig(
  redisEnv: Record<string, string>,
  at: { workspace: string; openai: FakeOpenAI; root: string },
): Config {
  return roleConfig(
    { workspace: at.workspace, openai: at.openai },
    {
      REDIS_URL: undefined,
      ...redisEnv,
      MAGPIE_REDIS_MIN_REPLICAS: '1',
      MAGPIE_STATE_DIR: path.join(at.root, 'state'),
      MAGPIE_STREAM: 'off',
      MAGPIE_MAX_CALLS_PER_MINUTE: '10000',
    },
  );
}

/** With MAGPIE_TEST_LOG_DIR=<dir>, each server's own log to <dir>/redis-<port>.log, for runs that get stuck. */
export function keepServerLogs(servers: { port: number; process: ChildProcess }[]): void {
  const logDir = process.env.MAGPIE_TEST_LOG_DIR;
  if (!logDir) return;
  for (const server of servers) {
    const file = createWriteStream(path.join(logDir, `redis-${server.port}.log`));
    server.process.stdout?.on('data', (chunk: Buffer) => file.write(chunk));
  }
}

/**
 * A failover test's clean-up, in order, each step bounded to 15 s: a stop that waits for an
 * absent Redis fails the clean-up, naming the part, instead of hanging the run.
 */
export async function stopEach(
  steps: [what: string, closing: () => Promise<unknown> | undefined][],
): Promise<void> {
  for (const [what, closing] of steps) {
    const stopping = closing();
    if (stopping && !(await closedWithin(stopping, 15_000)))
      throw new Error(`${what} did not stop within 15 s`);
  }
}

/** The last lines a failover test's logger wrote without MAGPIE_TEST_LOG_DIR (info and up), oldest first. */
const recentLines: string[] = [];
const RECENT_LINES = 3_000;

/**
 * With MAGPIE_TEST_LOG_DIR=<dir>, debug lines to <dir>/<name>-<time>.log (the role's and the
 * platform's); without it, info lines and up into memory, the last {@link RECENT_LINES} of them,
 * which a failing test prints for the chats it found stalled ({@link recentLogOf}).
 */
export function failoverLogger(name: string): Logger {
  const logDir = process.env.MAGPIE_TEST_LOG_DIR;
  if (logDir) {
    return createLogger({
      level: 'debug',
      destination: createWriteStream(path.join(logDir, `${name}-${Date.now()}.log`)),
    });
  }
  const memory = new Writable({
    write(chunk: Buffer, _encoding, done) {
      recentLines.push(chunk.toString().trimEnd());
      if (recentLines.length > RECENT_LINES) recentLines.splice(0, recentLines.length - RECENT_LINES);
      done();
    },
  });
  return createLogger({ level: 'info', destination: memory });
}

/**
 * What the failover tests' loggers kept about CLI chat `chatId`: its session's lines, the last
 * `limit`, then the last `limit` other warnings and errors but the queues' connection errors
 * (dozens in every failover): evidence for a chat found stalled.
 */
export function recentLogOf(chatId: string, limit = 60): string[] {
  const session = `"session":"cli:${chatId}"`;
  const warning = /"level":(40|50|60)/;
  const connectionNoise = /"msg":"(queue|queue worker|scheduled queue worker|helpers queue) error"/;
  return [
    ...recentLines.filter((line) => line.includes(session)).slice(-limit),
    ...recentLines
      .filter((line) => !line.includes(session) && warning.test(line) && !connectionNoise.test(line))
      .slice(-limit),
  ];
}

/** One message the platform sent: acknowledged once its publish resolved; its answers by outbound id. */
export interface Sent {
  token: string;
  chatId: string;
  acknowledgedAt?: number;
  /** Outbound id → time heard (the reply list and pub/sub may both bring one: taken once by id). */
  replies: Map<string, number>;
}

export interface FailoverTrafficOptions {
  chats: number;
  logger: Logger;
  /** What the platform does after a refused publish, before delivering it again. */
  beforeRedelivery(): Promise<void>;
}

/** Chats sending through `bus` from now until {@link FailoverTraffic.stop}. */
export class FailoverTraffic {
  readonly sent: Sent[] = [];
  /** Why each refused publish was refused. */
  readonly refusals: string[] = [];
  #sending = true;
  readonly #chats: Promise<unknown>;

  constructor(
    private readonly bus: Bus,
    private readonly options: FailoverTrafficOptions,
  ) {
    this.#chats = Promise.all(
      Array.from({ length: options.chats }, async (_, c) => {
        for (let i = 0; this.#sending; i++) {
          const s: Sent = { token: `<c${c}-m${i}>`, chatId: `failover-${c}`, replies: new Map() };
          this.sent.push(s);
          await this.#deliver(s);
        }
      }),
    );
  }

  acknowledged(): Sent[] {
    return this.sent.filter((s) => s.acknowledgedAt !== undefined);
  }

  /** Messages acknowledged after `time`. */
  acknowledgedAfter(time: number): Sent[] {
    return this.sent.filter((s) => (s.acknowledgedAt ?? 0) > time);
  }

  /** Each message as token:ack|unack:answers, for a failure's message. */
  state(): string {
    return this.sent
      .map((s) => `${s.token}:${s.acknowledgedAt ? 'ack' : 'unack'}:${s.replies.size}`)
      .join(' ');
  }

  /** The chats with a message acknowledged and not answered. */
  unansweredChats(): string[] {
    return [
      ...new Set(
        this.acknowledged()
          .filter((s) => !answered(s))
          .map((s) => s.chatId),
      ),
    ];
  }

  /** Stops sending; whether every chat's last delivery was acknowledged within 15 s. */
  stop(): Promise<boolean> {
    this.#sending = false;
    return closedWithin(this.#chats, 15_000);
  }

  /**
   * Checks that no message was answered twice; waits up to `timeoutMs` for every message
   * acknowledged before `acknowledgedBefore` to be answered, then checks each was answered once
   * and stored once in its session (under `workspace`). Returns them.
   */
  async expectEachAnsweredOnce(
    workspace: string,
    timeoutMs: number,
    acknowledgedBefore = Infinity,
  ): Promise<Sent[]> {
    const all = this.acknowledged().filter((s) => (s.acknowledgedAt ?? 0) < acknowledgedBefore);
    for (const s of this.sent) expect(s.replies.size, `answers to ${s.token}`).toBeLessThanOrEqual(1);
    await waitFor(() => all.every(answered), timeoutMs, 'every acknowledged message answered').catch(
      (err) => {
        const lost = all.filter((s) => !answered(s));
        throw new Error(`${err}; unanswered: ${lost.map((s) => s.token)}`);
      },
    );
    const sessions = path.join(workspace, 'sessions');
    const userLines = readdirSync(sessions)
      .filter((f) => f.endsWith('.jsonl'))
      .flatMap((f) => readFileSync(path.join(sessions, f), 'utf8').split('\n'))
      .filter((line) => line.includes('"role":"user"'));
    for (const s of all) {
      expect(s.replies.size, `answers to ${s.token}`).toBe(1);
      expect(userLines.filter((line) => line.includes(s.token)).length, `session entries of ${s.token}`).toBe(
        1,
      );
    }
    return all;
  }

  /** Publishes until acknowledged (a refused or failed publish is delivered again). */
  async #deliver(s: Sent): Promise<void> {
    const { logger } = this.options;
    const address = randomUUID();
    await this.bus.watchCliReplies(address, (payload) => {
      const out = JSON.parse(payload) as { id: string; kind?: string };
      if (out.kind === 'reply' && !s.replies.has(out.id)) {
        s.replies.set(out.id, Date.now());
        logger.debug({ test: 'reply', tok: s.token, id: out.id }, 'TEST reply heard');
      }
    });
    const message = {
      id: `cli:${address}`,
      channel: 'cli',
      chatId: s.chatId,
      senderId: 'cli',
      content: s.token,
      metadata: { replyAddress: address },
    };
    for (;;) {
      try {
        await this.bus.publishInbound(message);
        s.acknowledgedAt = Date.now();
        logger.debug({ test: 'ack', tok: s.token }, 'TEST acknowledged');
        return;
      } catch (err) {
        this.refusals.push(describeError(err));
        logger.info(
          { test: 'refusal', tok: s.token, err: describeError(err), status: this.bus.redis.status },
          'TEST publish refused',
        );
        await this.options.beforeRedelivery();
      }
    }
  }
}

/** Whether `s` has an answer. */
export function answered(s: Sent): boolean {
  return s.replies.size > 0;
}

/**
 * What Redis holds for one CLI chat of the traffic, for a failure's message: its mailbox's
 * length and whether it is in the pending set, the turn job its deduplication key names (its
 * state, tries, stalls, times, failure, lock and whether a next job waits behind it), the first
 * ids of its outbound lane with their jobs' states, tries, times and locks, and its held set.
 */
export async function chatDiagnosis(bus: Bus, chatId: string): Promise<Record<string, unknown>> {
  const { redis, prefix } = bus;
  const sessionKey = `cli:${chatId}`;
  const inbound = new Queue(INBOUND_QUEUE, { connection: redis, prefix });
  const outbound = new Queue(outboundQueueName('cli'), { connection: redis, prefix });
  try {
    const dedupId = turnDedupId(sessionKey);
    const turnJob = await inbound.getDeduplicationJobId(dedupId);
    const jobKey = inbound.toKey(turnJob ?? '');
    const { lane, held } = laneKeys(prefix, 'cli', chatId);
    const laneIds = await redis.lrange(lane, 0, 4);
    return {
      chatId,
      mailbox: await redis.llen(keys.mailbox(prefix, sessionKey)),
      pending: (await redis.sismember(keys.pendingMailboxes(prefix), sessionKey)) === 1,
      turnJob: turnJob && {
        id: turnJob,
        state: await inbound.getJobState(turnJob),
        job: await redis.hmget(
          jobKey,
          'atm',
          'ats',
          'stc',
          'defa',
          'processedOn',
          'finishedOn',
          'failedReason',
        ),
        lock: [await redis.get(`${jobKey}:lock`), await redis.pttl(`${jobKey}:lock`)],
        nextWaits: (await redis.exists(inbound.toKey(`dn:${dedupId}`))) === 1,
      },
      lane: await Promise.all(
        laneIds.map(async (id) => ({
          id,
          state: await outbound.getJobState(id),
          job: await redis.hmget(
            outbound.toKey(id),
            'atm',
            'ats',
            'stc',
            'processedOn',
            'finishedOn',
            'delay',
          ),
          lock: [
            await redis.get(outbound.toKey(`${id}:lock`)),
            await redis.pttl(outbound.toKey(`${id}:lock`)),
          ],
        })),
      ),
      held: await redis.smembers(held),
      now: Date.now(),
    };
  } finally {
    await Promise.all([inbound.close(), outbound.close()]);
  }
}

/**
 * For a failover test that found chats unanswered: what Redis holds for each ({@link chatDiagnosis})
 * and, without MAGPIE_TEST_LOG_DIR, the log lines kept about it ({@link recentLogOf}).
 */
export async function reportStalledChats(bus: Bus, chats: readonly string[]): Promise<void> {
  for (const chat of chats) {
    const found = await chatDiagnosis(bus, chat).catch((err: unknown) => ({
      unreadable: describeError(err),
    }));
    console.warn(`chat ${chat} unanswered after the failover:`, JSON.stringify(found));
    console.warn(`log lines about ${chat}, then other warnings:\n${recentLogOf(chat).join('\n')}`);
  }
}

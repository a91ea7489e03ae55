/**
 * Chaos that proves nothing is lost: 50 chats send continuously through the
 * CLI channel while a chaos loop SIGKILLs workers, the gateway and Redis at
 * random moments (each restarted), then every acknowledged message must have
 * been answered exactly once and in order, and every session file must be
 * valid JSONL. Used by `npm run bench:chaos` (bench/chaos.ts) and by
 * test/integration/chaos/chaos.test.ts with a shorter duration.
 *
 * "Acknowledged" is what a platform is told: `bus.publishInbound` resolved.
 * Redis runs with `appendfsync always`, so by then the mailbox entry and the
 * turn job are on disk and a SIGKILL of Redis cannot lose them. A publish
 * that fails (Redis away) is retried with the same message id, as a platform
 * redelivers, and the id's once-only mark makes the retry harmless.
 *
 * The hook for more kinds of chaos (a Sentinel master kill): a new
 * `ChaosKind` and its branch in `ChaosCast.strike`.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { parseConfig } from '../src/app/config.js';
import { Bus } from '../src/bus/bus.js';
import { safeJson } from '../src/bus/json-topic.js';
import { INBOUND_QUEUE, outboundQueueName } from '../src/bus/queues.js';
import { cliChatChannel } from '../src/channels/cli/cli-channel.js';
import { silentLogger } from '../src/log/index.js';
import { OutboundMessageSchema } from '../src/messages/messages.js';
import { sessionFileName } from '../src/sessions/session-key.js';
import { daemonEnv, tempWorkspace } from '../test/e2e/daemon-helpers.js';
import { startFakeOpenAI } from '../test/fakes/openai-server.js';
import { makeTestCertificates } from '../test/fakes/tls-certs.js';
import { waitFor } from '../test/fakes/wait-for.js';
import { ChaosCast, type ChaosKind } from './chaos-cast.js';
import {
  type ChaosVerdict,
  chaosAnswer,
  chaosMessage,
  judgeChaos,
  type ReceivedReply,
} from './chaos-check.js';

export interface ChaosOptions {
  /** How long the chats send and the chaos loop strikes. */
  durationMs: number;
  /** @defaultValue 50 */
  chats?: number;
  /** @defaultValue 3 */
  workers?: number;
  /** A chat's pause between an acknowledged message and its next one, ms (random in the range). @defaultValue [200, 1000] */
  thinkMs?: [number, number];
  /** The pause before each blow, ms (random in the range). @defaultValue [2000, 6000] */
  chaosEveryMs?: [number, number];
  /** How long the answers may take after the last blow. @defaultValue 120000 */
  drainTimeoutMs?: number;
  /** Progress lines. @defaultValue none */
  progress?: (line: string) => void;
  /** A folder to write every magpie process's log to (one file each). @defaultValue none */
  logsDir?: string;
  /** Redis behind Sentinel (a master, two replicas, three Sentinels): Redis blows are master kills. @defaultValue false */
  sentinel?: boolean;
  /** A Redis Cluster (three masters, two replicas each): Redis blows kill the master serving magpie's slot. @defaultValue false */
  cluster?: boolean;
  /** Sentinel and Cluster modes: MAGPIE_REDIS_MIN_REPLICAS, of two replicas (2: every replica confirms). @defaultValue 1 */
  minReplicas?: number;
  /** Workers and gateways with 2 s locks, not the deployed 30 s (chaos-cast.ts). @defaultValue false */
  shortLocks?: boolean;
  /** Every Redis on TLS only, with client certificates (a test CA made for the run). @defaultValue false */
  tls?: boolean;
}

export interface ChaosReport extends ChaosVerdict {
  seconds: number;
  chats: number;
  workers: number;
  kills: { worker: number; gateway: number };
  redisRestarts: number;
  /** Sentinel and Cluster modes: masters replaced, and how long each took (kill → new master named). */
  failovers?: { count: number; ms: number[] };
  /** Turns a worker found already stored in the session (the log line "redone turn"). */
  redoneTurns: number;
  /** Attempts that found their turn taken over by a later one and left it (lost locks). */
  takenOver: number;
  /** Claims that waited for an earlier attempt's session write (turn-fence.ts). */
  claimWaits: number;
  /** Publishes retried because Redis was away. */
  publishRetries: number;
  /** Jobs that failed for good (the log line "job failed"; a failed attempt that is retried logs another). */
  failedJobs: number;
  /** Failed attempts that were retried. */
  retriedAttempts: number;
  /** Why, as logged (distinct messages, a few). */
  failedJobReasons: string[];
  /** Chats whose mailbox still held messages once the queues were empty (nothing would answer them). */
  strandedMailboxes: number;
  redis: { appendfsync: 'always'; kill: 'SIGKILL' };
}

/** One chaos run; never throws for a lost or doubled message: the report counts them. */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const chats = options.chats ?? 50;
  const workers = options.workers ?? 3;
  const [thinkLo, thinkHi] = options.thinkMs ?? [200, 1000];
  const [gapLo, gapHi] = options.chaosEveryMs ?? [2000, 6000];
  const say = options.progress ?? (() => {});
  const between = (lo: number, hi: number) => lo + Math.random() * (hi - lo);

  const fake = await startFakeOpenAI({
    // Thousands of requests, each with its chat's history: not kept (a six-minute run filled the heap).
    record: false,
    responder: (req) => ({ content: chaosAnswer(sinceLastAnswer(req.body)) }),
  });
  const workspace = tempWorkspace();
  const certs = options.tls ? await makeTestCertificates() : undefined;
  const env = daemonEnv({
    OPENAI_BASE_URL: fake.baseURL,
    MAGPIE_WORKSPACE: workspace,
    MAGPIE_STREAM: 'off',
    // 50 chats writing every second are past the default guard of 30 model calls a minute
    // per chat; a turn stopped there answers with the limit line, not the message.
    MAGPIE_MAX_CALLS_PER_MINUTE: '100000',
  });
  const cast = new ChaosCast({
    workers,
    env,
    redisDir: mkdtempSync(path.join(os.tmpdir(), 'magpie-chaos-redis-')),
    sentinel: options.sentinel ?? false,
    cluster: options.cluster ?? false,
    minReplicas: options.minReplicas ?? 1,
    shortLocks: options.shortLocks ?? false,
    ...(certs ? { tls: certs } : {}),
  });
  let bus: Bus | undefined;
  try {
    await cast.start();
    const config = parseConfig({ ...cast.redisEnv(), MAGPIE_QUEUE_PREFIX: env.MAGPIE_QUEUE_PREFIX });
    bus = await Bus.connect({ config, logger: silentLogger() });
    // Each waiting chat listens for the connection's return.
    bus.redis.setMaxListeners(chats + 20);
    const senders = new Senders(bus, chats);
    await senders.observe();
    say(`running: ${chats} chats, ${workers} workers, ${Math.round(options.durationMs / 1000)} s of chaos`);

    const started = Date.now();
    const end = started + options.durationMs;
    let broken = false;
    const sending = senders.run(
      () => Date.now() < end,
      () => sleep(between(thinkLo, thinkHi)),
    );
    // A sender that gives up ends the chaos too; `await sending` below then throws, and finally cleans up.
    sending.catch(() => {
      broken = true;
    });
    for (const kind of chaosOrder()) {
      await sleep(between(gapLo, gapHi));
      if (Date.now() >= end || broken) break;
      await cast.strike(kind, (n) => Math.floor(Math.random() * n));
      say(`${kind} killed and back; ${senders.acknowledgedCount()} messages acknowledged`);
    }
    await sending;
    say(`sending stopped: ${senders.acknowledgedCount()} messages; waiting for the answers`);

    const pending = bus;
    await waitFor(() => senders.allAnswered(), options.drainTimeoutMs ?? 120_000, 'every answer', 100).catch(
      () => say(`${senders.unanswered()} messages still unanswered after the drain time`),
    );
    await waitFor(
      async () =>
        (await pending.pendingJobs(INBOUND_QUEUE)) + (await pending.pendingJobs(outboundQueueName('cli'))) ===
        0,
      60_000,
      'the queues to empty',
      100,
    );
    const received = await senders.collect();
    const strandedMailboxes = await countStranded(pending, [...senders.acknowledged.keys()]);
    const seconds = Math.round((Date.now() - started) / 1000);
    await cast.stop();
    if (options.logsDir) cast.writeLogs(options.logsDir);
    const verdict = judgeChaos({
      acknowledged: senders.acknowledged,
      received,
      sessions: readSessions(workspace, [...senders.acknowledged.keys()]),
    });
    return {
      seconds,
      chats,
      workers,
      ...verdict,
      kills: { worker: cast.blows.worker, gateway: cast.blows.gateway },
      redisRestarts: cast.blows.redis,
      ...(options.sentinel || options.cluster
        ? { failovers: { count: cast.failovers, ms: cast.failoverMs } }
        : {}),
      redoneTurns: cast.count('redone turn: messages already stored'),
      takenOver: cast.count(
        "another attempt of this turn took it over (this one's lock was lost); it answers",
      ),
      claimWaits: cast.count('another attempt of this turn is writing: the claim waits'),
      publishRetries: senders.retries,
      failedJobs: cast.count('job failed'),
      retriedAttempts: cast.count('job attempt failed; retried'),
      failedJobReasons: cast.reasons('job failed'),
      strandedMailboxes,
      redis: { appendfsync: 'always', kill: 'SIGKILL' },
    };
  } finally {
    await bus?.close();
    await cast.stop();
    await fake.close();
    certs?.remove();
  }
}

/** Worker, gateway, Redis in a fresh random order each round, so every kind comes up. */
function* chaosOrder(): Generator<ChaosKind> {
  const kinds: ChaosKind[] = ['worker', 'gateway', 'redis'];
  for (;;) {
    const round = [...kinds].sort(() => Math.random() - 0.5);
    yield* round;
  }
}

/** The texts of the user messages after the model's last answer in a chat request. */
function sinceLastAnswer(body: { messages?: Array<{ role: string; content: unknown }> }): string[] {
  const messages = body.messages ?? [];
  const lastAnswer = messages.map((m) => m.role).lastIndexOf('assistant');
  return messages
    .slice(lastAnswer + 1)
    .filter((m) => m.role === 'user')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
}

/** How many of the chats' mailboxes are not empty. */
async function countStranded(bus: Bus, chats: string[]): Promise<number> {
  const lengths = await Promise.all(chats.map((chat) => bus.mailbox(`cli:${chat}`).length()));
  return lengths.filter((n) => n > 0).length;
}

/** Each chat's session file lines (none when it has no file). */
function readSessions(workspace: string, chats: string[]): Map<string, string[]> {
  const dir = path.join(workspace, 'sessions');
  const files = new Set(readdirSync(dir));
  const out = new Map<string, string[]>();
  for (const chat of chats) {
    const name = `${sessionFileName(`cli:${chat}`)}.jsonl`;
    out.set(chat, files.has(name) ? readFileSync(path.join(dir, name), 'utf8').split('\n') : []);
  }
  return out;
}

/** One sent message: its chat, number and reply address. */
interface Sent {
  chat: string;
  n: number;
  address: string;
  acknowledged: boolean;
  answered: boolean;
  unwatch?: (() => Promise<void>) | undefined;
  /** What the address heard live: the fallback when its list has expired (a run of over ten minutes). */
  heard: Array<{ id: string; content: string }>;
}

/** The chats: each publishes its next message once the last was acknowledged, and records what comes back. */
class Senders {
  readonly acknowledged = new Map<string, number[]>();
  retries = 0;
  readonly #sent: Sent[] = [];
  /** The order in which the gateway sent reply ids, as published on the chats' pub/sub channels. */
  readonly #sendOrder = new Map<string, number>();
  /** Subscribed to every chat's pub/sub channel; resubscribes by itself after a Redis restart. */
  readonly #observer: Redis;

  constructor(
    private readonly bus: Bus,
    chats: number,
  ) {
    for (let c = 1; c <= chats; c++) this.acknowledged.set(`c${String(c).padStart(2, '0')}`, []);
    this.#observer = bus.createWorkerConnection();
    this.#observer.on('pmessage', (_pattern: string, _channel: string, payload: string) => {
      const parsed = OutboundMessageSchema.safeParse(safeJson(payload));
      if (parsed.success && !this.#sendOrder.has(parsed.data.id))
        this.#sendOrder.set(parsed.data.id, this.#sendOrder.size);
    });
  }

  /**
   * Starts observing the order of sends: the CLI channel publishes each message
   * on `<prefix>:cli-chat:<chat>` before pushing it to its reply lists, and one
   * subscriber hears publishes in the order Redis ran them. (The order replies
   * reach the chats' clients is no measure: after a reconnect a client reads
   * the lists address by address while later replies arrive live.)
   */
  async observe(): Promise<void> {
    await this.#observer.psubscribe(`${this.bus.prefix}:${cliChatChannel('*')}`);
  }

  acknowledgedCount(): number {
    return [...this.acknowledged.values()].reduce((sum, a) => sum + a.length, 0);
  }

  allAnswered(): boolean {
    return this.unanswered() === 0;
  }

  unanswered(): number {
    return this.#sent.filter((s) => s.acknowledged && !s.answered).length;
  }

  /** Every chat sends until `more()` is false, pausing `think()` after each acknowledged message. */
  async run(more: () => boolean, think: () => Promise<unknown>): Promise<void> {
    await Promise.all(
      [...this.acknowledged.keys()].map(async (chat) => {
        for (let n = 1; more(); n++) {
          await this.#send(chat, n);
          await think();
        }
      }),
    );
  }

  /** Every entry of every reply list, in order of first arrival (a list that expired: what was heard live). */
  async collect(): Promise<ReceivedReply[]> {
    const received: ReceivedReply[] = [];
    for (const sent of this.#sent) {
      await sent.unwatch?.();
      const listed = (await this.bus.readCliReplies(sent.address)).flatMap((payload) => {
        const parsed = OutboundMessageSchema.safeParse(safeJson(payload));
        return parsed.success ? [{ id: parsed.data.id, content: parsed.data.content }] : [];
      });
      for (const { id, content } of listed.length > 0 ? listed : sent.heard) {
        received.push({ chat: sent.chat, id, content, address: sent.address, seq: this.#sendOrder.get(id) });
      }
    }
    this.#observer.disconnect();
    return received;
  }

  async #send(chat: string, n: number): Promise<void> {
    const address = randomUUID();
    const sent: Sent = { chat, n, address, acknowledged: false, answered: false, heard: [] };
    this.#sent.push(sent);
    sent.unwatch = await this.bus.watchCliReplies(address, (payload) => this.#hear(sent, payload));
    const message = {
      id: `cli:${address}`,
      channel: 'cli',
      chatId: chat,
      senderId: 'cli',
      content: chaosMessage(chat, n),
      metadata: { replyAddress: address },
    };
    const giveUpAt = Date.now() + 120_000;
    for (;;) {
      try {
        await this.bus.publishInbound(message);
        break;
      } catch (err) {
        if (Date.now() > giveUpAt) throw err;
        this.retries += 1;
        // The socket may be gone before ioredis has seen its close event: let that event run first.
        await new Promise((resolve) => setImmediate(resolve));
        // Not events.once: it rejects on the 'error' events a reconnecting connection emits.
        if (this.bus.redis.status !== 'ready')
          await new Promise((resolve) => this.bus.redis.once('ready', resolve));
      }
    }
    sent.acknowledged = true;
    this.acknowledged.get(chat)!.push(n);
  }

  /** A message to `sent`'s address, heard live; the first one answers it and ends the watch. */
  #hear(sent: Sent, payload: string): void {
    const parsed = OutboundMessageSchema.safeParse(safeJson(payload));
    if (!parsed.success) return;
    const { id, content } = parsed.data;
    if (!sent.heard.some((h) => h.id === id)) sent.heard.push({ id, content });
    if (sent.answered) return;
    sent.answered = true;
    const unwatch = sent.unwatch;
    sent.unwatch = undefined;
    // Redis away now: the watcher drops the subscription with its connection, nothing to undo.
    void unwatch?.().catch(() => undefined);
  }
}

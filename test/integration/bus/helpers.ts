/**
 * Shared parts of the bus integration tests: a config with a unique prefix,
 * a scripted AgentRunner (our own port, so a fake is fine), a recording
 * Channel, and a bounded polling helper for conditions with no event.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { afterEach, expect, inject } from 'vitest';
import type { AgentRunner, TurnOptions, TurnResult } from '../../../src/agent/types.js';
import { parseConfig } from '../../../src/app/config.js';
import { Bus, type BusConnectOptions } from '../../../src/bus/bus.js';
import type { ConsumerTuning } from '../../../src/bus/consumer.js';
import { CliChannel } from '../../../src/channels/cli/cli-channel.js';
import { sendAndWait } from '../../../src/channels/cli/client.js';
import type { Channel } from '../../../src/channels/types.js';
import type { Config } from '../../../src/config/index.js';
import { OutboundDelivery } from '../../../src/delivery/outbound-delivery.js';
import { silentLogger } from '../../../src/log/index.js';
import type { InboundMessage, OutboundMessage } from '../../../src/messages/messages.js';
import { sessionKeyOf } from '../../../src/messages/messages.js';
import { TurnWorker, type TurnWorkerOptions } from '../../../src/worker/turn-worker.js';

export function testConfig(url = inject('redisUrl'), extra: Record<string, string> = {}): Config {
  return parseConfig({
    REDIS_URL: url,
    MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
    MAGPIE_WORKSPACE: os.tmpdir(),
    ...extra,
  });
}

import { waitFor } from '../../fakes/wait-for.js';

export { waitFor };

/** One recorded turn of the fake agent. */
export interface RecordedTurn {
  session: string;
  /** Contents seen by the turn, in order: the batch, then drained messages. */
  contents: string[];
  start: number;
  end: number;
}

/**
 * A fake agent: each "LLM iteration" takes `iterationMs`; it runs `iterations`
 * of them, draining pending messages between them, and replies with the
 * contents it saw joined by `+`. Honours the abort signal.
 */
export class ScriptedAgent implements AgentRunner {
  readonly turns: RecordedTurn[] = [];
  private readonly active = new Map<string, number>();
  maxConcurrentPerSession = 0;
  maxConcurrent = 0;
  private running = 0;

  constructor(
    private readonly options: {
      iterationMs?: number | ((contents: string[]) => number);
      iterations?: number;
      fail?: (m: InboundMessage[]) => Error | undefined;
    } = {},
  ) {}

  async processMessage(
    messages: InboundMessage | InboundMessage[],
    options: TurnOptions = {},
  ): Promise<TurnResult> {
    const batch = Array.isArray(messages) ? messages : [messages];
    const head = batch[0]!;
    const session = sessionKeyOf(head);
    const now = (this.active.get(session) ?? 0) + 1;
    this.active.set(session, now);
    this.running += 1;
    this.maxConcurrent = Math.max(this.maxConcurrent, this.running);
    this.maxConcurrentPerSession = Math.max(this.maxConcurrentPerSession, now);
    const turn: RecordedTurn = { session, contents: batch.map((m) => m.content), start: Date.now(), end: 0 };
    try {
      const failure = this.options.fail?.(batch);
      if (failure) throw failure;
      const iterations = this.options.iterations ?? 1;
      let outcome: 'ok' | 'cancelled' = 'ok';
      for (let i = 0; i < iterations; i++) {
        const ms =
          typeof this.options.iterationMs === 'function'
            ? this.options.iterationMs(turn.contents)
            : (this.options.iterationMs ?? 0);
        if (!(await sleep(ms, options.signal))) {
          outcome = 'cancelled';
          break;
        }
        if (i < iterations - 1)
          turn.contents.push(...((await options.drainPending?.()) ?? []).map((m) => m.content));
      }
      turn.end = Date.now();
      this.turns.push(turn);
      return {
        sessionKey: session,
        reply: outcome === 'cancelled' ? 'Stopped.' : turn.contents.join('+'),
        target: { channel: head.channel, chatId: head.chatId, threadId: head.threadId },
        metrics: {
          sessionKey: session,
          llmCalls: iterations,
          promptTokens: 0,
          completionTokens: 0,
          toolCalls: [],
          wallMs: turn.end - turn.start,
          outcome,
        },
      };
    } finally {
      this.active.set(session, (this.active.get(session) ?? 1) - 1);
      this.running -= 1;
    }
  }

  async processDirect(content: string, sessionKey: string, options?: TurnOptions): Promise<TurnResult> {
    return this.processMessage(
      {
        id: randomUUID(),
        channel: 'cli',
        chatId: sessionKey,
        senderId: '',
        content,
        media: [],
        isGroup: false,
        receivedAt: new Date().toISOString(),
        metadata: {},
      },
      options,
    );
  }

  async processHeartbeat(prompt: string, options?: TurnOptions): Promise<TurnResult> {
    return this.processDirect(prompt, 'heartbeat', options);
  }
}

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const timer = setTimeout(() => resolve(true), ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve(false);
      },
      { once: true },
    );
  });
}

/** A channel that records what it was asked to deliver. */
export class RecordingChannel implements Channel {
  readonly sent: OutboundMessage[] = [];
  readonly activity: Array<{ chatId: string; active: boolean }> = [];
  constructor(readonly name: string) {}
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async send(message: OutboundMessage): Promise<void> {
    this.sent.push(message);
  }
  startActivity(chatId: string): void {
    this.activity.push({ chatId, active: true });
  }
  stopActivity(chatId: string): void {
    this.activity.push({ chatId, active: false });
  }
}

/** A bus, a turn worker over `agent` and a recording channel `test`; `close()` tears it all down. */
export async function startHarness(options: {
  agent: AgentRunner;
  config?: Config;
  concurrency?: number;
  tuning?: ConsumerTuning;
  /** Spoken replies (src/voice); its `publish` is given the harness's bus. */
  voice?: (bus: Bus) => TurnWorkerOptions['voice'];
}) {
  const config = options.config ?? testConfig();
  const logger = silentLogger();
  const bus = await Bus.connect({ config, logger, turnJobs: { backoffMs: 50 }, patient: true });
  const worker = new TurnWorker({
    bus,
    agent: options.agent,
    logger,
    concurrency: options.concurrency ?? 4,
    ...options.tuning,
    ...(options.voice ? { voice: options.voice(bus) } : {}),
  });
  await worker.start();
  const channel = new RecordingChannel('test');
  const delivery = await OutboundDelivery.start({ bus, channel, logger });
  return {
    bus,
    worker,
    channel,
    config,
    async close() {
      await worker.close();
      await delivery.close();
      await bus.close();
    },
  };
}

/** What `startHarness` returns. */
export type Harness = Awaited<ReturnType<typeof startHarness>>;

/**
 * For a describe block whose tests each start one harness: returns the
 * starter and closes the harness it last started after each test.
 *
 * @example
 * const start = harnessPerTest();
 * it('…', async () => { const harness = await start({ agent: new ScriptedAgent() }); });
 */
export function harnessPerTest(): typeof startHarness {
  let current: Harness | undefined;
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return async (options) => {
    current = await startHarness(options);
    return current;
  };
}

/** Base of fake agents whose tests send only messages: direct and heartbeat turns throw "not used". */
export abstract class MessageOnlyAgent implements AgentRunner {
  abstract processMessage(
    messages: InboundMessage | InboundMessage[],
    options?: TurnOptions,
  ): Promise<TurnResult>;

  processDirect(): Promise<TurnResult> {
    throw new Error('not used');
  }

  processHeartbeat(): Promise<TurnResult> {
    throw new Error('not used');
  }
}

/**
 * The clean-ups a test registers as it starts things (`cleanups.push(() => bus.close())`),
 * run last-registered first after each test of the describe block.
 */
export function cleanupsAfterEach(): Array<() => Promise<void>> {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  return cleanups;
}

/** Connects a bus to `config` (patient or not). */
export type Connect = (config: Config, patient?: boolean) => Promise<Bus>;

/** A `Connect` whose buses are closed by `cleanups` (from cleanupsAfterEach). */
export function busConnector(
  cleanups: Array<() => Promise<void>>,
  extra: Partial<BusConnectOptions> = {},
): Connect {
  return async (config, patient = false) => {
    const bus = await Bus.connect({ config, logger: silentLogger(), patient, ...extra });
    cleanups.push(() => bus.close());
    return bus;
  };
}

/**
 * The CLI path of a daemon: a started TurnWorker (`worker` options) on a patient bus, and
 * OutboundDelivery through a CliChannel on a gateway bus; both closed by `cleanups`.
 */
export async function startCliStack(
  connect: Connect,
  config: Config,
  cleanups: Array<() => Promise<void>>,
  worker: Omit<TurnWorkerOptions, 'bus' | 'logger'>,
): Promise<void> {
  const logger = silentLogger();
  const turnWorker = new TurnWorker({ bus: await connect(config, true), logger, ...worker });
  await turnWorker.start();
  cleanups.push(() => turnWorker.close());
  const gatewayBus = await connect(config);
  const delivery = await OutboundDelivery.start({
    bus: gatewayBus,
    channel: new CliChannel({ bus: gatewayBus, logger }),
    logger,
  });
  cleanups.push(() => delivery.close());
}

/**
 * A CLI stack on `config` (startCliStack, a ScriptedAgent) answers a turn in `chatId`, then
 * `blow` strikes (a failover) and the next turn is answered as well: each once, in order.
 */
export async function answersAcross(
  connect: Connect,
  config: Config,
  cleanups: Array<() => Promise<void>>,
  chatId: string,
  blow: (client: Bus) => Promise<void>,
): Promise<void> {
  const agent = new ScriptedAgent();
  await startCliStack(connect, config, cleanups, { agent, concurrency: 2 });
  const client = await connect(config, true);
  const first = await sendAndWait(client, { content: 'before', chatId, timeoutMs: 10_000 });
  expect(first.content).toBe('before');
  await blow(client);
  const second = await sendAndWait(client, { content: 'after', chatId, timeoutMs: 30_000 });
  expect(second.content).toBe('after');
  expect(agent.turns.map((t) => t.contents)).toEqual([['before'], ['after']]);
}

/** The reply address of the one CLI request waiting in chat `chatId`'s mailbox (waits up to 5 s for it). */
export async function cliReplyAddress(bus: Bus, chatId: string): Promise<string> {
  const mailbox = bus.mailbox(`cli:${chatId}`);
  await waitFor(async () => (await mailbox.length()) === 1, 5_000, 'the request in the mailbox');
  const { messages } = await mailbox.read(0);
  return messages[0]!.metadata.replyAddress as string;
}

/** An inbound message on channel `test`. */
export function inbound(chatId: string, content: string, extra: Partial<InboundMessage> = {}) {
  return { id: `test:${chatId}:${randomUUID()}`, channel: 'test', chatId, senderId: 'u1', content, ...extra };
}

/** The result a fake agent returns for a finished turn of `head`'s session (no tokens, no tools). */
export function finishedTurn(
  head: InboundMessage,
  reply: string,
  outcome: TurnResult['metrics']['outcome'] = 'ok',
  wallMs = 0,
): TurnResult {
  const session = sessionKeyOf(head);
  return {
    sessionKey: session,
    reply,
    target: {
      channel: head.channel,
      chatId: head.chatId,
      ...(head.threadId ? { threadId: head.threadId } : {}),
    },
    metrics: {
      sessionKey: session,
      llmCalls: 1,
      promptTokens: 0,
      completionTokens: 0,
      toolCalls: [],
      wallMs,
      outcome,
    },
  };
}

/**
 * Each chat's messages reach the platform in the order they were queued, on
 * real Redis: after a gateway is SIGKILLed while sending a chat's first reply
 * (the next gateway must not send the second before it), while the first is
 * still being sent or waits for a retry; and a first reply that fails for
 * good, or whose job never came, holds nothing back. Other chats go on.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { Bus } from '../../../src/bus/bus.js';
import { DeadHolders } from '../../../src/bus/dead-holders.js';
import { enterLane } from '../../../src/bus/outbound-order.js';
import { outboundQueueName } from '../../../src/bus/queues.js';
import { OutboundDelivery } from '../../../src/delivery/outbound-delivery.js';
import { AppError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import type { OutboundMessage } from '../../../src/messages/messages.js';
import { killAndWait } from '../../fakes/process.js';
import { RecordingChannel, testConfig, waitFor } from '../bus/helpers.js';

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'gateway-child.ts');
/** Longer than any test: a held message that goes on before it was released, not by its timer. */
const HOLD_MS = 120_000;

/** A recording channel whose `send` of some contents waits for `open(content)` or throws `fail(content)`'s error. */
class ScriptedChannel extends RecordingChannel {
  readonly started: string[] = [];
  readonly #gates = new Map<string, () => void>();
  readonly #waits = new Map<string, Promise<void>>();
  #failures = new Map<string, () => Error>();

  gate(content: string): void {
    this.#waits.set(content, new Promise((resolve) => this.#gates.set(content, resolve)));
  }
  open(content: string): void {
    this.#gates.get(content)?.();
  }
  failOnce(content: string, error: () => Error): void {
    this.#failures.set(content, error);
  }
  override async send(message: OutboundMessage): Promise<void> {
    this.started.push(message.content);
    const failure = this.#failures.get(message.content);
    if (failure) {
      this.#failures.delete(message.content);
      throw failure();
    }
    await this.#waits.get(message.content);
    await super.send(message);
  }
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function connect(prefix?: string) {
  const config = testConfig(inject('redisUrl'), prefix ? { MAGPIE_QUEUE_PREFIX: prefix } : {});
  const bus = await Bus.connect({ config, logger: silentLogger() });
  closers.push(() => bus.close());
  return bus;
}

async function deliver(bus: Bus, channel: RecordingChannel, holdMs = HOLD_MS) {
  const delivery = await OutboundDelivery.start({
    bus,
    channel,
    logger: silentLogger(),
    holdMs,
    tuning: { lockDurationMs: 1_000, stalledIntervalMs: 500 },
  });
  closers.push(() => delivery.close());
  return delivery;
}

function reply(id: string, chatId: string, content: string) {
  return { id, channel: 'test', chatId, content };
}

/** Resolves when the child prints `line`. */
async function printed(child: ChildProcess, line: string): Promise<void> {
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.split('\n').includes(line)) resolve();
    });
    child.once('exit', (code) =>
      reject(new Error(`gateway child exited (${code}) before "${line}": ${out}`)),
    );
  });
}

function contents(channel: RecordingChannel, chatId?: string): string[] {
  return channel.sent.filter((m) => chatId === undefined || m.chatId === chatId).map((m) => m.content);
}

/**
 * A gateway child (its consumers recorded in `consumers`, when given) SIGKILLed while it sends
 * reply `one` of `chat`, with reply `two` queued behind it.
 */
async function killedMidSend(bus: Bus, chat: string, consumers?: string): Promise<void> {
  const args = [
    '--import',
    'tsx',
    CHILD,
    inject('redisUrl'),
    bus.prefix,
    'one',
    ...(consumers ? [consumers] : []),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  closers.push(() => killAndWait(child));
  await printed(child, 'ready');
  const sending = printed(child, 'sending one');
  await bus.publishOutbound(reply(`${chat}1`, chat, 'one'));
  await sending;
  await bus.publishOutbound(reply(`${chat}2`, chat, 'two'));
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

describe('per-chat delivery order', () => {
  it('a gateway SIGKILLed while sending reply 1 with reply 2 queued: the next gateway sends 1 before 2, each once', async () => {
    const bus = await connect();
    await killedMidSend(bus, 'c');

    const channel = new RecordingChannel('test');
    await deliver(bus, channel);
    await waitFor(() => channel.sent.length >= 2, 20_000, 'both replies');
    await waitFor(
      async () => (await bus.pendingJobs(outboundQueueName('test'))) === 0,
      5_000,
      'the queue to empty',
    );
    // The killed gateway saw reply 1 arrive and died before it reached the platform.
    expect(await bus.redis.lrange(`${bus.prefix}:platform`, 0, -1)).toEqual([]);
    expect(contents(channel)).toEqual(['one', 'two']);
  }, 40_000);

  it('a gateway SIGKILLed mid-send with the default 30 s lock: its machine hands the reply back at once, both go out in order', async () => {
    const bus = await connect();
    const consumers = mkdtempSync(path.join(os.tmpdir(), 'magpie-consumers-'));
    closers.push(async () => rmSync(consumers, { recursive: true, force: true }));
    await killedMidSend(bus, 'h', consumers);

    // The next gateway keeps the default lock too: only the hand-back can free reply 1 in time.
    const channel = new RecordingChannel('test');
    const delivery = await OutboundDelivery.start({ bus, channel, logger: silentLogger(), holdMs: HOLD_MS });
    closers.push(() => delivery.close());
    const holders = new DeadHolders(consumers, silentLogger());
    expect(await holders.reclaim((prefix) => (prefix === bus.prefix ? bus.redis : undefined))).toBe(1);
    await waitFor(() => channel.sent.length >= 2, 10_000, 'both replies, well before the 30 s lock');
    expect(contents(channel)).toEqual(['one', 'two']);
  }, 40_000);

  it('a later reply taken while the earlier one is still sending follows it as soon as it is sent', async () => {
    const bus = await connect();
    const channel = new ScriptedChannel('test');
    channel.gate('one');
    await deliver(bus, channel);
    await bus.publishOutbound(reply('r1', 'c', 'one'));
    await waitFor(() => channel.started.includes('one'), 5_000, 'reply 1 sending');
    await bus.publishOutbound(reply('r2', 'c', 'two'));
    await waitFor(
      async () => (await bus.pendingJobs(outboundQueueName('test'), ['delayed'])) === 1,
      5_000,
      'reply 2 held',
    );
    expect(contents(channel)).toEqual([]);
    channel.open('one');
    await waitFor(() => channel.sent.length >= 2, 10_000, 'reply 2 released (its hold is 120 s)');
    expect(contents(channel)).toEqual(['one', 'two']);
  });

  it('a chat waiting for a retry of its first reply holds its second, and no other chat', async () => {
    const bus = await connect();
    const channel = new ScriptedChannel('test');
    channel.failOnce('a1', () => new Error('platform hiccup'));
    await deliver(bus, channel);
    await bus.publishOutbound(reply('a1', 'a', 'a1'));
    await waitFor(() => channel.started.includes('a1'), 5_000, 'a1 tried');
    await bus.publishOutbound(reply('a2', 'a', 'a2'));
    await bus.publishOutbound(reply('b1', 'b', 'b1'));
    await waitFor(() => contents(channel, 'b').length === 1, 5_000, 'b1 sent');
    // b1 went while a1 waited for its retry (1 s backoff), and a2 did not pass a1.
    expect(contents(channel, 'a')).toEqual([]);
    await waitFor(() => contents(channel, 'a').length >= 2, 15_000, 'a1 retried, then a2');
    expect(contents(channel, 'a')).toEqual(['a1', 'a2']);
  });

  it('a reply that fails for good lets the next one of its chat go at once', async () => {
    const bus = await connect();
    const channel = new ScriptedChannel('test');
    channel.gate('one');
    channel.failOnce('one', () => new AppError('DELIVERY_PERMANENT', 'chat not found'));
    await deliver(bus, channel);
    await bus.publishOutbound(reply('r1', 'c', 'one'));
    await bus.publishOutbound(reply('r2', 'c', 'two'));
    await waitFor(() => channel.sent.length >= 1, 10_000, 'reply 2 (its hold is 120 s)');
    expect(contents(channel)).toEqual(['two']);
    expect(channel.started).toEqual(['one', 'two']);
  });

  it('a place kept for a reply whose job never came (its publisher died) holds nothing back', async () => {
    const bus = await connect();
    const channel = new RecordingChannel('test');
    await enterLane(bus.redis, bus.prefix, { channel: 'test', chatId: 'c', id: 'r-never-added' });
    await deliver(bus, channel);
    await bus.publishOutbound(reply('r2', 'c', 'two'));
    await waitFor(() => channel.sent.length >= 1, 10_000, 'reply 2 (its hold is 120 s)');
    expect(contents(channel)).toEqual(['two']);
  });
});

/**
 * Two attempts of one turn at once: the first worker's lock is lost while its
 * turn runs, the stalled-job check hands the job to a second worker, and a
 * message that arrived meanwhile is read only by the second. Both name their
 * reply after the first message, so whichever queued first would win the id;
 * the fence lets only the later attempt answer, and the later message is not lost.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { TurnOptions, TurnResult } from '../../../src/agent/types.js';
import { keys } from '../../../src/bus/keys.js';
import { TurnFence } from '../../../src/bus/turn-fence.js';
import type { InboundMessage } from '../../../src/messages/messages.js';
import {
  cleanupsAfterEach,
  finishedTurn,
  inbound,
  MessageOnlyAgent,
  startHarness,
  testConfig,
  waitFor,
} from './helpers.js';

/** An agent whose every turn waits until the test lets it go; the reply joins what it read. */
class GatedAgent extends MessageOnlyAgent {
  readonly calls: Array<{ contents: string[]; release: () => void }> = [];

  async processMessage(
    messages: InboundMessage | InboundMessage[],
    _options?: TurnOptions,
  ): Promise<TurnResult> {
    const batch = Array.isArray(messages) ? messages : [messages];
    const head = batch[0]!;
    const contents = batch.map((m) => m.content);
    await new Promise<void>((release) => this.calls.push({ contents, release }));
    return finishedTurn(head, contents.join('+'));
  }
}

/** A write the test holds open: `started` resolves once it runs (its lease taken), `finish()` ends it. */
function heldWrite(onEnd?: () => void) {
  let begin!: () => void;
  let finish!: () => void;
  const started = new Promise<void>((resolve) => {
    begin = resolve;
  });
  const released = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const write = async () => {
    begin();
    await released;
    onEnd?.();
  };
  return { write, started, finish: () => finish() };
}

/** Deletes the lock of every active turn job: as when its worker's renewals stopped reaching Redis. */
async function loseLocks(redis: Redis, prefix: string): Promise<number> {
  const locks = await redis.keys(`${prefix}:inbound:*:lock`);
  if (locks.length > 0) await redis.del(...locks);
  return locks.length;
}

describe('two attempts of one turn', () => {
  const cleanups = cleanupsAfterEach();

  it('only the later attempt answers, so a message only it read is not lost', async () => {
    const config = testConfig();
    const first = new GatedAgent();
    const second = new GatedAgent();
    // The first worker has one slot, held by its turn: the job handed out again can only go to the second.
    const tuning = { stalledIntervalMs: 100, lockDurationMs: 30_000, maxStalledCount: 5 };
    const a = await startHarness({ agent: first, config, concurrency: 1, tuning });
    cleanups.push(() => a.close());
    await a.bus.publishInbound(inbound('f1', 'one'));
    await waitFor(() => first.calls.length === 1, 5_000, 'the first attempt running');
    await a.bus.publishInbound(inbound('f1', 'two'));
    expect(await loseLocks(a.bus.redis, config.redis.prefix)).toBe(1);

    const b = await startHarness({ agent: second, config, tuning });
    cleanups.push(() => b.close());
    await waitFor(() => second.calls.length === 1, 10_000, 'the second attempt running');
    expect(second.calls[0]!.contents).toEqual(['one', 'two']);
    expect(await a.bus.redis.get(keys.turnAttempt(config.redis.prefix, 'test:f1'))).not.toBeNull();

    // The first attempt finishes first, with only "one" read: it must leave the answer to the second.
    first.calls[0]!.release();
    await a.worker.close(); // waits for the first attempt's job to end: answered or left
    // ... and the second attempt's running record, which /stop and status read.
    const running = await a.bus.redis.get(keys.running(config.redis.prefix, 'test:f1'));
    expect(JSON.parse(running ?? '{}').worker).toBe(b.worker.id);
    second.calls[0]!.release();
    const sent = () => [...a.channel.sent, ...b.channel.sent].map((m) => m.content);
    await waitFor(() => sent().length >= 1, 5_000, 'a reply delivered');
    await waitFor(async () => (await a.bus.mailbox('test:f1').length()) === 0, 5_000, 'the mailbox trimmed');
    expect(sent()).toEqual(['one+two']);
  });

  it('an attempt whose claim vanished (a failover, a Redis without its data) takes it again and answers once', async () => {
    const config = testConfig();
    const agent = new GatedAgent();
    const a = await startHarness({ agent, config });
    cleanups.push(() => a.close());
    await a.bus.publishInbound(inbound('f2', 'three'));
    await waitFor(() => agent.calls.length === 1, 5_000, 'the attempt running');
    const claim = keys.turnAttempt(config.redis.prefix, 'test:f2');
    const attempt = await a.bus.redis.get(claim);
    expect(attempt).not.toBeNull();
    expect(await a.bus.redis.del(claim)).toBe(1);

    agent.calls[0]!.release();
    await waitFor(() => a.channel.sent.length === 1, 5_000, 'the reply');
    expect(a.channel.sent.map((m) => m.content)).toEqual(['three']);
    await waitFor(async () => (await a.bus.mailbox('test:f2').length()) === 0, 5_000, 'the mailbox trimmed');
    // Answered by the attempt that lost its claim, not by a redo after the sweep.
    expect(agent.calls).toHaveLength(1);
    expect(await a.bus.redis.get(claim)).toBe(attempt);
  });

  it('of two attempts that both lost their claim, only the first to check takes it back', async () => {
    const config = testConfig();
    const a = await startHarness({ agent: new GatedAgent(), config });
    cleanups.push(() => a.close());
    const fence = a.bus.turnFence;
    const wrote: string[] = [];
    const write = (who: string) => async () => {
      wrote.push(who);
    };
    await fence.claim('test:f3', 'first');
    await fence.claim('test:f3', 'second');
    await a.bus.redis.del(keys.turnAttempt(config.redis.prefix, 'test:f3'));
    const checks = await Promise.all([
      fence.holding('test:f3', 'first', write('first')),
      fence.holding('test:f3', 'second', write('second')),
    ]);
    expect(checks).toEqual(['retaken', 'taken']);
    expect(await fence.holding('test:f3', 'first', write('first'))).toBe('held');
    expect(await fence.holding('test:f3', 'second', write('second'))).toBe('taken');
    expect(wrote).toEqual(['first', 'first']);
  });

  it('a claim made while another attempt writes waits for the write, and that attempt then stops', async () => {
    const config = testConfig();
    const a = await startHarness({ agent: new GatedAgent(), config });
    cleanups.push(() => a.close());
    const fence = a.bus.turnFence;
    const events: string[] = [];
    await fence.claim('test:f4', 'earlier');
    const held = heldWrite(() => events.push('earlier wrote'));
    const earlier = fence.holding('test:f4', 'earlier', held.write);
    await held.started;
    let waiting!: () => void;
    const waited = new Promise<void>((resolve) => {
      waiting = resolve;
    });
    const later = fence.claim('test:f4', 'later', (leftMs) => {
      expect(leftMs).toBeGreaterThan(0);
      waiting();
    });
    await waited;
    events.push('later waits');
    held.finish();
    expect(await earlier).toBe('held');
    await later;
    events.push('later claimed');
    expect(events).toEqual(['later waits', 'earlier wrote', 'later claimed']);
    expect(await a.bus.redis.get(keys.turnAttempt(config.redis.prefix, 'test:f4'))).toBe('later');
    // The earlier attempt's next write does not run.
    const next = await fence.holding('test:f4', 'earlier', async () => {
      events.push('earlier wrote again');
    });
    expect(next).toBe('taken');
    expect(events).not.toContain('earlier wrote again');
  });

  it('a write lease left by a process killed mid-write holds a later claim back only until it expires', async () => {
    const config = testConfig();
    const a = await startHarness({ agent: new GatedAgent(), config });
    cleanups.push(() => a.close());
    const outlived: string[] = [];
    const fence = new TurnFence(a.bus.redis, config.redis.prefix, {
      writeLeaseMs: 300,
      onLeaseOutlived: (_session, attempt) => outlived.push(attempt),
    });
    await fence.claim('test:f5', 'stalled');
    // The stalled attempt's write does not end until the test lets it: its lease expires first.
    const held = heldWrite();
    const stalled = fence.holding('test:f5', 'stalled', held.write);
    await held.started;
    expect(await a.bus.redis.get(keys.turnWriting(config.redis.prefix, 'test:f5'))).toBe('stalled');
    const waits: number[] = [];
    await fence.claim('test:f5', 'next', (leftMs) => waits.push(leftMs));
    expect(waits.length).toBeGreaterThan(0);
    expect(Math.max(...waits)).toBeLessThanOrEqual(300);
    expect(await a.bus.redis.get(keys.turnAttempt(config.redis.prefix, 'test:f5'))).toBe('next');
    // The write that outlasted its lease is reported when it ends, and that attempt writes no more.
    held.finish();
    expect(await stalled).toBe('held');
    expect(outlived).toEqual(['stalled']);
    expect(await fence.holding('test:f5', 'stalled', async () => {})).toBe('taken');
  });

  it('an attempt whose claim vanished does not take it back while another attempt writes', async () => {
    const config = testConfig();
    const a = await startHarness({ agent: new GatedAgent(), config });
    cleanups.push(() => a.close());
    const fence = a.bus.turnFence;
    await fence.claim('test:f6', 'writer');
    const held = heldWrite();
    const writer = fence.holding('test:f6', 'writer', held.write);
    await held.started;
    await a.bus.redis.del(keys.turnAttempt(config.redis.prefix, 'test:f6'));
    let ran = false;
    expect(
      await fence.holding('test:f6', 'other', async () => {
        ran = true;
      }),
    ).toBe('taken');
    expect(ran).toBe(false);
    held.finish();
    expect(await writer).toBe('held');
  });
});

/**
 * The consumer's LeanWorker on a real Redis: a job that arrives alone costs two
 * fetches (the one that takes it, one woken by the marker BullMQ re-adds),
 * not four; jobs arriving together or while every slot is busy are still all
 * taken without waiting for the blocking read's time-out; `drained` still fires.
 * Fetches are counted as MONITOR sees them: each moveToActive, and each fetch
 * inside moveToFinished, pops the wait list once (RPOPLPUSH on `<queue>:wait`).
 */
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Consumer } from '../../../src/bus/consumer.js';
import { silentLogger } from '../../../src/log/index.js';
import { type RedisHandle, startRedis } from '../../fakes/redis-server.js';
import { waitFor } from '../../fakes/wait-for.js';

// A Redis of its own: MONITOR on the suite's shared one raced other files' traffic while ioredis
// switched the connection into monitor mode ("Command queue state error").
let server: RedisHandle;
let monitor: Redis;
const popped: string[] = [];
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  server = await startRedis();
  monitor = await new Redis(server.url).monitor();
  monitor.on('monitor', (_t: string, args: string[]) => {
    if (args[0]?.toLowerCase() === 'rpoplpush' && args[1]) popped.push(args[1]);
  });
});
afterAll(async () => {
  monitor?.disconnect();
  await server?.stop();
});
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

/** A queue with a consumer of `concurrency` slots; `started` collects job ids as processing starts. */
function setUp(concurrency: number, processor: (id: string) => Promise<void> = async () => {}) {
  const prefix = `test-${randomUUID()}`;
  const name = 'lean';
  const connection = new Redis(server.url, { maxRetriesPerRequest: null });
  const producer = new Redis(server.url);
  const started: string[] = [];
  const done: string[] = [];
  const consumer = new Consumer({
    queue: name,
    prefix,
    connection,
    concurrency,
    logger: silentLogger(),
    processor: async (job) => {
      started.push(job.id);
      await processor(job.id);
      done.push(job.id);
    },
  });
  const queue = new Queue(name, { connection: producer, prefix });
  cleanups.push(async () => {
    await consumer.close();
    await queue.close();
    producer.disconnect();
  });
  const waitKey = `${prefix}:${name}:wait`;
  return {
    consumer,
    started,
    done,
    add: (id: string) => queue.add('job', {}, { jobId: id, removeOnComplete: true }),
    /** Fetches seen so far (MONITOR lags: call after `settled`). */
    fetches: () => popped.filter((key) => key === waitKey).length,
    /** Waits until MONITOR has seen a mark sent after everything before it. */
    settled: async () => {
      const mark = `mark-${randomUUID()}`;
      let seen = false;
      const listener = (_t: string, args: string[]) => {
        if (args[1] === mark) seen = true;
      };
      monitor.on('monitor', listener);
      await producer.echo(mark);
      await waitFor(() => seen, 10_000, 'MONITOR to catch up');
      monitor.off('monitor', listener);
    },
  };
}

describe('LeanWorker (the consumer)', () => {
  it('takes a job that arrives alone with two fetches, not four, and reports the drain', async () => {
    const q = setUp(8);
    await q.consumer.ready();
    let drains = 0;
    q.consumer.onDrained(() => {
      drains++;
    });
    const jobs = 5;
    const from = Date.now();
    for (let i = 0; i < jobs; i++) {
      const before = drains;
      await q.add(`one-${i}`);
      await waitFor(
        () => q.done.length === i + 1 && drains > before,
        10_000,
        `job ${i} and the drain after it`,
      );
    }
    await q.settled();
    // An idle worker also asks once each time its blocking read times out (BullMQ's drainDelay, 5 s).
    const polls = Math.ceil((Date.now() - from) / 5_000);
    // BullMQ's own Worker made 4 per job here (take, ask again, woken by the marker, fetch in moveToFinished).
    expect(q.fetches()).toBeGreaterThanOrEqual(2 * jobs);
    expect(q.fetches()).toBeLessThanOrEqual(2 * jobs + polls);
    expect(q.started).toEqual(['one-0', 'one-1', 'one-2', 'one-3', 'one-4']);
  });

  it('takes a second job at once while the first holds its slot (the re-added marker wakes it)', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const q = setUp(2, async (id) => {
      if (id === 'first') await held;
    });
    await q.consumer.ready();
    await q.add('first');
    await waitFor(() => q.started.includes('first'), 10_000, 'the first job');
    await q.add('second');
    // Well inside BullMQ's 5 s blocking read: a lost wake-up would only be noticed at its time-out.
    await waitFor(() => q.done.includes('second'), 2_500, 'the second job while the first runs');
    release();
    await waitFor(() => q.done.includes('first'), 10_000, 'the first job to finish');
  });

  it('takes every job of a burst larger than its slots, fetching from moveToFinished when all are busy', async () => {
    const q = setUp(2, () => new Promise((resolve) => setImmediate(resolve)));
    await q.consumer.ready();
    const ids = Array.from({ length: 20 }, (_, i) => `burst-${i}`);
    await Promise.all(ids.map((id) => q.add(id)));
    await waitFor(() => q.done.length === ids.length, 2_500, 'the whole burst');
    expect([...q.done].sort()).toEqual([...ids].sort());
  });
});

/**
 * Jobs held by a killed process, handed back by this host at once instead of
 * after their locks run out (bus/dead-holders.ts), on a real Redis with BullMQ.
 * A "killed" holder is a BullMQ worker that took a job by hand (its lock, 30 s,
 * is never renewed nor released) and whose record names a pid that has exited.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { Consumer } from '../../../src/bus/consumer.js';
import { DeadHolders, thisHost } from '../../../src/bus/dead-holders.js';
import { processStart } from '../../../src/bus/pid.js';
import { silentLogger } from '../../../src/log/index.js';
import { waitFor } from '../../fakes/wait-for.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

/** A pid that no process has any more. */
function exitedPid(): number {
  return spawnSync(process.execPath, ['-e', '']).pid;
}

async function setUp() {
  const prefix = `test-${randomUUID()}`;
  const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
  const queue = new Queue('q', { connection: redis, prefix });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-holders-'));
  cleanups.push(async () => {
    await queue.close();
    redis.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });
  /** Takes the next job the way a process then SIGKILLed would leave it: active, locked, never renewed. */
  const takeAndDie = async () => {
    const worker = new Worker('q', null, { connection: redis, prefix });
    const token = `${worker.id}:0`;
    const job = await worker.getNextJob(token);
    await worker.close();
    return { worker: worker.id, job: job!, token };
  };
  /** Writes the record a process would have left. */
  const record = (worker: string, holder: { pid: number; started: string }, maxStalledCount = 2) => {
    const file = path.join(dir, `${holder.pid}-${holder.started}.json`);
    const consumers = [{ prefix, queue: 'q', worker, maxStalledCount }];
    writeFileSync(file, JSON.stringify({ host: thisHost(), ...holder, consumers }));
    return file;
  };
  const holders = new DeadHolders(dir, silentLogger());
  const reclaim = () => holders.reclaim((p) => (p === prefix ? redis : undefined));
  return { prefix, redis, queue, dir, takeAndDie, record, reclaim };
}

describe('jobs of a killed process', () => {
  it('go back to wait at once, first in line, counted as a stall, and its record is removed', async () => {
    const { redis, queue, prefix, takeAndDie, record, reclaim } = await setUp();
    await queue.add('j', {}, { jobId: 'first' });
    const { worker, job } = await takeAndDie();
    await queue.add('j', {}, { jobId: 'second' });
    expect(job.id).toBe('first');
    expect(await queue.getJobState('first')).toBe('active');
    const file = record(worker, { pid: exitedPid(), started: '1' });

    // Two processes looking at once: one hands it back, and it counts as one stall.
    expect((await Promise.all([reclaim(), reclaim()])).sort()).toEqual([0, 1]);
    expect(await queue.getJobState('first')).toBe('waiting');
    expect(await redis.exists(`${prefix}:q:first:lock`)).toBe(0);
    expect(await redis.hget(`${prefix}:q:first`, 'stc')).toBe('1');
    expect(existsSync(file)).toBe(false);
    // Ahead of the job that was waiting already.
    const next = new Worker('q', null, { connection: redis, prefix });
    cleanups.push(() => next.close());
    expect((await next.getNextJob(`${next.id}:0`))?.id).toBe('first');
  });

  it('a living process keeps its jobs and its record; a pid reused by a later process does not', async () => {
    const { queue, takeAndDie, record, reclaim } = await setUp();
    await queue.add('j', {}, { jobId: 'alive' });
    const alive = await takeAndDie();
    const kept = record(alive.worker, { pid: process.pid, started: processStart(process.pid)! });
    expect(await reclaim()).toBe(0);
    expect(await queue.getJobState('alive')).toBe('active');
    expect(existsSync(kept)).toBe(true);

    // The same pid with another start time: the process that wrote the record is gone.
    rmSync(kept);
    record(alive.worker, { pid: process.pid, started: '1' });
    expect(await reclaim()).toBe(1);
    expect(await queue.getJobState('alive')).toBe('waiting');
  });

  it('a record from another host, boot or pid namespace is not judged: a pid means nothing there', async () => {
    const { queue, takeAndDie, dir, prefix, reclaim } = await setUp();
    await queue.add('j', {}, { jobId: 'elsewhere' });
    const { worker } = await takeAndDie();
    const file = path.join(dir, '7-1.json');
    const consumers = [{ prefix, queue: 'q', worker, maxStalledCount: 2 }];
    const host = thisHost().replace(/pid:\[\d+\]$/, 'pid:[1]');
    writeFileSync(file, JSON.stringify({ host, pid: exitedPid(), started: '1', consumers }));
    expect(await reclaim()).toBe(0);
    expect(await queue.getJobState('elsewhere')).toBe('active');
    expect(existsSync(file)).toBe(true);
  });

  it('leaves jobs another worker holds, and ones whose lock already ran out, alone', async () => {
    const { redis, queue, prefix, takeAndDie, record, reclaim } = await setUp();
    await queue.add('j', {}, { jobId: 'other' });
    await queue.add('j', {}, { jobId: 'expired' });
    const other = await takeAndDie();
    const gone = await takeAndDie();
    await redis.del(`${prefix}:q:${gone.job.id}:lock`);
    const file = record(gone.worker, { pid: exitedPid(), started: '1' });
    expect(await reclaim()).toBe(0);
    expect(await queue.getJobState(other.job.id!)).toBe('active');
    expect(await queue.getJobState(gone.job.id!)).toBe('active'); // BullMQ's stalled check takes it
    expect(existsSync(file)).toBe(false);
  });

  it('a job handed back more often than maxStalledCount fails when next taken, and its processor never runs', async () => {
    const { redis, queue, prefix, takeAndDie, record, reclaim } = await setUp();
    await queue.add('j', {}, { jobId: 'poison' });
    for (let round = 0; round < 2; round++) {
      const { worker } = await takeAndDie();
      record(worker, { pid: exitedPid(), started: String(round) }, 1);
      expect(await reclaim()).toBe(1);
    }
    const ran: string[] = [];
    const consumer = new Consumer({
      queue: 'q',
      prefix,
      connection: new Redis(inject('redisUrl'), { maxRetriesPerRequest: null }),
      processor: async (job) => {
        ran.push(job.id);
      },
      logger: silentLogger(),
    });
    cleanups.push(() => consumer.close());
    await waitFor(async () => (await queue.getJobState('poison')) === 'failed', 10_000, 'the job failed');
    expect(ran).toEqual([]);
    expect((await Job.fromId(queue, 'poison'))?.failedReason).toBe('job stalled more than allowable limit');
    expect(await redis.hget(`${prefix}:q:poison`, 'stc')).toBe('2');
  });

  it('a state folder it cannot write costs only the hand-back: the consumer is recorded nowhere and nothing throws', async () => {
    const { dir } = await setUp();
    const notAFolder = path.join(dir, 'file');
    writeFileSync(notAFolder, '');
    const holders = new DeadHolders(path.join(notAFolder, 'consumers'), silentLogger());
    expect(() => holders.add({ prefix: 'p', queue: 'q', worker: 'w', maxStalledCount: 2 })).not.toThrow();
    expect(await holders.reclaim(() => undefined)).toBe(0);
    expect(() => holders.remove()).not.toThrow();
  });
});

/**
 * The jobs a killed process held, handed back as soon as this host knows it is
 * dead, not when their locks run out.
 *
 * BullMQ finds a dead holder only through its locks: a job whose lock expired
 * (30 s) is moved back at the next stalled check (every 15 s), so a worker
 * SIGKILLed mid-turn left its chat without an answer for 30–45 s, and a gateway
 * killed mid-delivery held that chat's later replies as long (they wait for
 * the one before, bus/outbound-order.ts). A process on this host can do
 * better: each process that consumes queues writes which BullMQ workers it
 * runs (`<state>/consumers/<pid>-<start>.json`: host, pid, the process's start
 * time, each consumer's prefix, queue and worker id). Any process of this host
 * (the same host name, boot and pid namespace) looks at those files when it
 * starts and every few seconds after; one whose process is gone (no such pid,
 * or a pid reused by a later process) is dead for sure, and every active job
 * whose lock still names one of its workers goes
 * back to its queue's wait list at once, first in line: one script takes its
 * lock over from the dead token (so of two processes looking at once, only one
 * goes on) and counts the stall, then BullMQ's own `moveToWait` moves it.
 *
 * As BullMQ's stalled check does, each hand-back counts against the job's
 * `maxStalledCount` (the job hash's `stc`), and a job over it is marked to fail
 * when next taken (`defa`): a message that kills every worker that takes it
 * does not kill them forever. Only this host's processes are judged (a pid
 * means nothing elsewhere); a process on another machine is left to the
 * locks. A process that stops cleanly removes its file.
 */

import { randomUUID } from 'node:crypto';
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { type LuaScript, runScript } from './lua.js';
import { processStart } from './pid.js';

/** When a dead process's record is removed even if no process here serves all its queues. */
const FORGOTTEN_AFTER_MS = 24 * 60 * 60 * 1000;

/** BullMQ's reason for a job that stalled too often (moveStalledJobsToWait's), set as its deferred failure. */
const STALLED_TOO_OFTEN = 'job stalled more than allowable limit';

/**
 * KEYS: the job's lock, the job. ARGV: the dead worker's token, this hand-back's token, maxStalledCount,
 * the failure reason. Takes the lock over from the dead token (so of two processes handing the job
 * back, only one counts it) and counts the stall; -1 when the lock is not the dead token's any more.
 */
const TAKE_OVER: LuaScript = {
  name: 'deadHolderTakeOver',
  keys: 2,
  lua: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', math.max(redis.call('PTTL', KEYS[1]), 1000))
local stalled = redis.call('HINCRBY', KEYS[2], 'stc', 1)
if stalled > tonumber(ARGV[3]) then redis.call('HSET', KEYS[2], 'defa', ARGV[4]) end
return stalled
`,
};

const HolderSchema = z.object({
  /**
   * Where its pid means something: the host name, the boot and the pid namespace (two containers
   * sharing a state folder and a host name still see different processes under one pid).
   */
  host: z.string(),
  pid: z.number().int().positive(),
  /** The process's start time (field 22 of /proc/PID/stat), telling a reused pid apart. */
  started: z.string(),
  consumers: z.array(
    z.object({
      prefix: z.string(),
      queue: z.string(),
      worker: z.string(),
      maxStalledCount: z.number().int().nonnegative(),
    }),
  ),
});
type Holder = z.infer<typeof HolderSchema>;

/** A consumer as {@link DeadHolders.add} records it. */
export interface HeldQueue {
  prefix: string;
  queue: string;
  /** The BullMQ worker's id: the first part of every lock token it writes. */
  worker: string;
  /** Hand-backs after which the job fails instead (the consumer's `maxStalledCount`). */
  maxStalledCount: number;
}

/** A connection to hand jobs back on, for a prefix (each agent's bus has its own). */
export type ConnectionFor = (prefix: string) => Redis | undefined;

/** This process's host, boot and pid namespace, as {@link HolderSchema}'s `host` holds them. */
export function thisHost(): string {
  const read = (what: () => string) => {
    try {
      return what().trim();
    } catch {
      return '?';
    }
  };
  const boot = read(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8'));
  const pids = read(() => readlinkSync('/proc/self/ns/pid'));
  return `${os.hostname()} ${boot} ${pids}`;
}

export class DeadHolders {
  readonly #dir: string;
  readonly #file: string;
  readonly #logger: Logger;
  readonly #self: Holder;

  constructor(dir: string, logger: Logger) {
    this.#dir = dir;
    this.#logger = logger;
    const started = processStart(process.pid) ?? String(Date.now());
    this.#self = { host: thisHost(), pid: process.pid, started, consumers: [] };
    this.#file = path.join(dir, `${process.pid}-${started}.json`);
  }

  /** Records a consumer of this process (its file is rewritten whole: a crash mid-write leaves the old one). */
  add(held: HeldQueue): void {
    this.#self.consumers.push({ ...held });
    try {
      mkdirSync(this.#dir, { recursive: true, mode: 0o700 });
      const temporary = `${this.#file}.tmp`;
      writeFileSync(temporary, JSON.stringify(this.#self), { mode: 0o600 });
      renameSync(temporary, this.#file);
    } catch (err) {
      // Not fatal: if this process is killed, its jobs wait for their locks as they did before.
      this.#logger.warn(
        { err: describeError(err), dir: this.#dir },
        'cannot record this process’s consumers; if it is killed its jobs wait for their locks',
      );
    }
  }

  /** Removes this process's file (a clean stop: its jobs were finished or handed back by BullMQ). */
  remove(): void {
    try {
      rmSync(this.#file, { force: true });
    } catch {
      // never written (see add): nothing to remove
    }
  }

  /**
   * Hands back every job a dead process of this host held, and removes its file once that is done.
   * Resolves to the number of jobs handed back. A file it cannot read is left alone (logged).
   */
  async reclaim(connectionFor: ConnectionFor): Promise<number> {
    let names: string[];
    try {
      names = readdirSync(this.#dir).filter((n) => n.endsWith('.json'));
    } catch {
      return 0; // no process has recorded anything yet
    }
    let handedBack = 0;
    for (const name of names) {
      const file = path.join(this.#dir, name);
      if (file === this.#file) continue;
      const holder = this.#read(file);
      if (!holder || holder.host !== this.#self.host || processStart(holder.pid) === holder.started) continue;
      try {
        let all = true;
        for (const consumer of holder.consumers) {
          const redis = connectionFor(consumer.prefix);
          if (redis) handedBack += await this.#handBack(redis, consumer);
          else all = false;
        }
        // A record naming an agent this process does not serve stays for one that does, until its
        // locks have long run out.
        if (all || Date.now() - statSync(file).mtimeMs > FORGOTTEN_AFTER_MS) rmSync(file, { force: true });
      } catch (err) {
        // Redis away: the file stays, and the next look tries again.
        this.#logger.warn(
          { err: describeError(err), pid: holder.pid },
          'could not hand back a dead process’s jobs',
        );
      }
    }
    return handedBack;
  }

  #read(file: string): Holder | undefined {
    try {
      return HolderSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
    } catch (err) {
      this.#logger.warn({ err: describeError(err), file }, 'unreadable consumer record; left alone');
      return undefined;
    }
  }

  /** Moves the active jobs whose lock names `consumer.worker` back to wait. */
  async #handBack(redis: Redis, consumer: Holder['consumers'][number]): Promise<number> {
    const base = `${consumer.prefix}:${consumer.queue}`;
    const active = await redis.lrange(`${base}:active`, 0, -1);
    if (active.length === 0) return 0;
    const locks = await redis.mget(active.map((id) => `${base}:${id}:lock`));
    const held = active.flatMap((id, i) =>
      locks[i]?.startsWith(`${consumer.worker}:`) ? [[id, locks[i]!]] : [],
    );
    if (held.length === 0) return 0;
    const queue = new Queue(consumer.queue, { connection: redis, prefix: consumer.prefix });
    let handedBack = 0;
    try {
      for (const [id, dead] of held as Array<[string, string]>) {
        const job = await Job.fromId(queue, id);
        if (!job) continue;
        const token = `${dead}:handed-back-${randomUUID()}`;
        const lock = `${base}:${id}:lock`;
        const args = [dead, token, consumer.maxStalledCount, STALLED_TOO_OFTEN];
        // Another process handed it back first, or the lock ran out and BullMQ did: not ours to count.
        if ((await runScript(redis, TAKE_OVER, lock, `${base}:${id}`, ...args)) === -1) continue;
        await job.moveToWait(token);
        handedBack += 1;
        this.#logger.info({ queue: consumer.queue, job: id }, 'a dead process’s job handed back');
      }
    } finally {
      await queue.close();
    }
    return handedBack;
  }
}

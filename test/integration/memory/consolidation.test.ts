/**
 * Memory consolidation against the fake OpenAI server and a real Redis: the
 * model's MEMORY.md replaces the old one when it passes the checks (a
 * duplicate merged, a contradicted fact replaced by the newer), is refused
 * when it does not, costs no model call when nothing changed, and runs once
 * when two workers take jobs of the scheduled queue.
 */
import { appendFile, mkdir, readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { startMemoryJobs } from '../../../src/app/memory-jobs.js';
import { SCHEDULED_QUEUE } from '../../../src/bus/cron-store.js';
import { CONSOLIDATE_JOB } from '../../../src/bus/memory-schedule.js';
import { ScheduledWorker } from '../../../src/bus/scheduled-worker.js';
import { silentLogger } from '../../../src/log/index.js';
import { Consolidator } from '../../../src/memory/consolidation/consolidator.js';
import { MemoryHistory } from '../../../src/memory/history/history.js';
import { providerFor } from '../../fakes/openai-provider.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../fakes/openai-server.js';
import { waitFor } from '../../fakes/wait-for.js';
import { schedulerFixturePerTest, testConfig } from '../scheduler/helpers.js';

let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake?.close();
});

const framed = (text: string) => ({ content: `<<<MEMORY.md\n${text}>>>\n` });
const fx = schedulerFixturePerTest();
let history: MemoryHistory;
let consolidator: Consolidator;
const memoryFile = () => path.join(fx.workspace, 'memory', 'MEMORY.md');
const memory = () => readFile(memoryFile(), 'utf8');
/** The user message of the newest request (MEMORY.md and the new material). */
const lastPrompt = () => String(fake.requests.at(-1)?.body.messages.at(-1)?.content ?? '');

async function note(day: string, text: string): Promise<void> {
  const dir = path.join(fx.workspace, 'memory', day.slice(0, 6));
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, `${day}.md`), text);
}

beforeEach(async () => {
  history = new MemoryHistory({ workspace: fx.workspace });
  consolidator = new Consolidator({
    history,
    provider: providerFor(fake),
    logger: silentLogger(),
    maxChars: 2_000,
  });
});

describe('memory consolidation', () => {
  it('merges a duplicate fact: the model’s MEMORY.md is applied and recorded as "consolidation"', async () => {
    await history.write('write_file', '# People\n\n- Ana likes green tea\n- Bruno plays chess\n');
    await note('20261125', '# 2026-11-25\n\n- Ana said again that she likes green tea.\n');
    fake.enqueue(
      framed('# People\n\n- Ana likes green tea (said again on 2026-11-25)\n- Bruno plays chess\n'),
    );
    const before = fake.requests.length;

    const outcome = await consolidator.run();

    expect(fake.requests.length).toBe(before + 1);
    expect(lastPrompt()).toContain('- Ana likes green tea\n- Bruno plays chess');
    expect(lastPrompt()).toContain('Ana said again that she likes green tea.');
    expect(outcome).toMatchObject({ status: 'applied', added: 1, removed: 1 });
    expect(await memory()).toBe(
      '# People\n\n- Ana likes green tea (said again on 2026-11-25)\n- Bruno plays chess\n',
    );
    const [entry] = await history.log();
    expect(entry).toMatchObject({ who: 'consolidation', added: 1, removed: 1 });
    expect(await history.diff()).toContain(
      '-- Ana likes green tea\n+- Ana likes green tea (said again on 2026-11-25)\n',
    );
  });

  it('replaces a contradicted fact with the newer one from a conversation', async () => {
    await history.write('write_file', '# People\n\n- Marta lives in Porto\n- Rui is vegetarian\n');
    await mkdir(path.join(fx.workspace, 'sessions'), { recursive: true });
    await writeFile(
      path.join(fx.workspace, 'sessions', 'telegram_42.jsonl'),
      `${JSON.stringify({ role: 'user', content: 'Marta moved to Coimbra last week', ts: new Date().toISOString() })}\n` +
        `${JSON.stringify({ role: 'tool', content: 'tool output is not read', ts: new Date().toISOString() })}\n` +
        'not json\n',
    );
    fake.enqueue(
      framed('# People\n\n- Marta lives in Coimbra (moved in November 2026)\n- Rui is vegetarian\n'),
    );

    expect(await consolidator.run()).toMatchObject({ status: 'applied' });

    expect(lastPrompt()).toMatch(/user \(\d{4}-\d\d-\d\d \d\d:\d\d\): Marta moved to Coimbra last week/);
    expect(lastPrompt()).not.toContain('tool output is not read');
    expect(await memory()).not.toContain('Porto');
    expect(await history.diff()).toMatch(/-- Marta lives in Porto\n\+- Marta lives in Coimbra/);
  });

  it('makes no model call when nothing changed since the last run, nor before anything was written', async () => {
    const start = fake.requests.length;
    expect(await consolidator.run()).toMatchObject({ status: 'skipped' });
    expect(fake.requests.length).toBe(start);

    await history.write('write_file', '- Ana likes tea\n');
    await note('20261125', '- Ana likes tea\n');
    fake.enqueue(framed('- Ana likes tea\n'));
    expect(await consolidator.run()).toEqual({ status: 'unchanged' });
    expect(fake.requests.length).toBe(start + 1);

    expect(await consolidator.run()).toMatchObject({
      status: 'skipped',
      reason: 'nothing new since the last consolidation',
    });
    expect(fake.requests.length).toBe(start + 1);

    await appendFile(path.join(fx.workspace, 'memory', '202611', '20261125.md'), '- Bruno plays go\n');
    fake.enqueue(framed('- Ana likes tea\n- Bruno plays go\n'));
    expect(await consolidator.run()).toMatchObject({ status: 'applied' });
    expect(fake.requests.length).toBe(start + 2);
  });

  it('tells a note written in the millisecond the run started, or just after with a lagging mtime, by its content', async () => {
    // Whole milliseconds from Date.now(), a coarse tick behind for mtimes: the two clocks a run compares.
    const t = Date.now() + 60_000;
    let clock = t;
    const clocked = new Consolidator({
      history,
      provider: providerFor(fake),
      logger: silentLogger(),
      maxChars: 2_000,
      now: () => clock,
    });
    const start = fake.requests.length;
    const notePath = path.join(fx.workspace, 'memory', '202611', '20261125.md');
    await history.write('write_file', '- Ana likes tea\n');
    await note('20261125', '- Ana likes tea\n');
    await utimes(notePath, (t + 0.4) / 1000, (t + 0.4) / 1000); // written in the run's first millisecond
    fake.enqueue(framed('- Ana likes tea\n'));
    expect(await clocked.run()).toEqual({ status: 'unchanged' });

    clock = t + 10_000;
    expect(await clocked.run()).toMatchObject({ status: 'skipped' });
    expect(fake.requests.length).toBe(start + 1);

    // Written after that run had read the notes, stamped 3 ms before its start by a lagging clock.
    await note('20261126', '- Bruno plays go\n');
    await utimes(path.join(fx.workspace, 'memory', '202611', '20261126.md'), (t - 3) / 1000, (t - 3) / 1000);
    fake.enqueue(framed('- Ana likes tea\n- Bruno plays go\n'));
    expect(await clocked.run()).toMatchObject({ status: 'applied' });
    expect(lastPrompt()).toContain('Bruno plays go');
    expect(lastPrompt()).not.toContain('Daily note memory/202611/20261125.md');
    expect(fake.requests.length).toBe(start + 2);
  });

  it.each([
    [
      'an answer outside the frame',
      { content: 'Sure! Here is the new file:\n- Ana likes tea\n' },
      /required format/,
    ],
    ['an empty file', framed('\n'), /empty/],
    ['a file over the cap', framed(`- ${'x'.repeat(2_100)}\n`), /over MAGPIE_MEMORY_MAX_CHARS \(2000\)/],
    ['a wild shrink', framed('- Ana likes tea\n'), /keeps 1 of 5 lines/],
  ])('refuses %s and leaves MEMORY.md as it was', async (_what, reply, reason) => {
    const text = '- Ana likes tea\n- Bruno plays go\n- Carla sings\n- Duarte cooks\n- Eva runs\n';
    await history.write('write_file', text);
    await note('20261125', '- Fernando paints\n');
    fake.enqueue(reply);
    const outcome = await consolidator.run();
    expect(outcome.status).toBe('refused');
    expect(outcome.status === 'refused' ? outcome.reason : '').toMatch(reason);
    expect(await memory()).toBe(text);
    expect((await history.log()).map((e) => e.who)).toEqual(['write_file']);
  });

  it('runs once when two workers take jobs of the scheduled queue', async () => {
    const config = testConfig(inject('redisUrl'), fx.prefix, fx.workspace, {
      MAGPIE_MEMORY_CONSOLIDATE: '03:30',
      MAGPIE_TIMEZONE: 'Europe/Lisbon',
    });
    await history.write('write_file', '- Ana likes tea\n');
    await note('20261125', '- Bruno plays go\n');
    fake.enqueue(framed('- Ana likes tea\n- Bruno plays go\n'));
    const start = fake.requests.length;
    const target = {
      connection: fx.bus.redis,
      prefix: fx.prefix,
      provider: providerFor(fake),
      logger: silentLogger(),
    };
    const jobsA = await startMemoryJobs({ config, ...target });
    const jobsB = await startMemoryJobs({ config, ...target });
    const ran: string[] = [];
    const worker = (name: string) =>
      new ScheduledWorker({
        connection: fx.bus.createWorkerConnection(),
        prefix: fx.prefix,
        logger: silentLogger(),
        processor: async (job) => {
          ran.push(name);
          const jobs = name === 'A' ? jobsA.jobs : jobsB.jobs;
          return (await jobs[job.name]?.(job)) ?? 'ignored';
        },
      });
    const workers = [worker('A'), worker('B')];
    const queue = new Queue(SCHEDULED_QUEUE, { connection: fx.bus.redis, prefix: fx.prefix });
    try {
      await Promise.all(workers.map((w) => w.ready()));
      const scheduler = await queue.getJobScheduler('memory-consolidate');
      expect(scheduler).toMatchObject({ pattern: '30 3 * * *', tz: 'Europe/Lisbon', name: CONSOLIDATE_JOB });
      const delayed = await queue.getDelayed();
      expect(delayed.map((j) => j.name)).toEqual([CONSOLIDATE_JOB]);
      await delayed[0]!.promote();
      const done = await waitFor(async () =>
        (await queue.getCompleted()).find((j) => j.name === CONSOLIDATE_JOB),
      );
      expect(done.returnvalue).toMatch(/^Consolidated MEMORY.md \([0-9a-f]{7}\): \+1 -0 lines\.$/);
      expect(ran).toHaveLength(1);
      expect(fake.requests.length).toBe(start + 1);
      expect((await history.log()).filter((e) => e.who === 'consolidation')).toHaveLength(1);
    } finally {
      await Promise.all(workers.map((w) => w.close()));
      await queue.close();
      await jobsA.close();
      await jobsB.close();
    }
  });
});

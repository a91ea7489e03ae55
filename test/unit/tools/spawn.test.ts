/** spawn: queues a helper job addressed to the current chat and answers at once; helpers cannot spawn. */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/index.js';
import { type HelperJob, HelperJobSchema } from '../../../src/messages/helper-job.js';
import { createSpawnTool } from '../../../src/tools/spawn.js';
import { toolContext } from './helpers.js';

class MemoryQueue {
  readonly jobs: HelperJob[] = [];
  failWith: Error | undefined;
  async enqueue(job: HelperJob): Promise<void> {
    if (this.failWith) throw this.failWith;
    this.jobs.push(job);
  }
}

describe('spawn', () => {
  it('queues a helper job for the origin chat at depth 1 and answers with its id at once', async () => {
    const queue = new MemoryQueue();
    const tool = createSpawnTool(queue);
    const ctx = toolContext('/tmp', {
      channel: 'telegram',
      chatId: '42',
      threadId: '7',
      sessionKey: 'telegram:42/7',
    });
    const result = await tool.execute({ task: 'research trains to Lyon', label: 'trains' }, ctx);
    expect(result.isError).toBeUndefined();
    expect(queue.jobs).toHaveLength(1);
    const job = queue.jobs[0]!;
    expect(HelperJobSchema.parse(job)).toEqual(job);
    expect(job).toMatchObject({
      task: 'research trains to Lyon',
      label: 'trains',
      depth: 1,
      origin: { channel: 'telegram', chatId: '42', threadId: '7', sessionKey: 'telegram:42/7' },
    });
    expect(result.forLLM).toMatch(new RegExp(`^helper ${job.id} started \\(trains\\)`));
    const second = await tool.execute({ task: 'another' }, ctx);
    expect(second.forLLM).not.toContain(job.id);
    expect(new Set(queue.jobs.map((j) => j.id)).size).toBe(2);
  });

  it('refuses inside a helper (depth > 0)', async () => {
    const queue = new MemoryQueue();
    const result = await createSpawnTool(queue).execute({ task: 'x' }, toolContext('/tmp', { depth: 1 }));
    expect(result.isError).toBe(true);
    expect(result.forLLM).toMatch(/helpers cannot spawn/);
    expect(queue.jobs).toHaveLength(0);
  });

  it('tells the model when the queue is unreachable', async () => {
    const queue = new MemoryQueue();
    queue.failWith = new AppError('REDIS_UNAVAILABLE', 'Redis is away', { transient: true });
    const result = await createSpawnTool(queue).execute({ task: 'x' }, toolContext('/tmp'));
    expect(result.isError).toBe(true);
    expect(result.forLLM).toMatch(/could not be started: .*Redis is away/);
  });
});

/**
 * The daemon end to end: `magpie gateway` and `magpie worker` processes on a
 * real Redis, the fake OpenAI server, and `magpie send` as the user.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { daemonSuite } from '../fakes/daemon.js';
import { waitFor } from '../fakes/wait-for.js';
import { daemonEnv, magpie, OPEN_STDIN, type Proc, pipedChat } from './daemon-helpers.js';

describe('daemon (gateway + worker processes)', () => {
  const suite = daemonSuite();
  const { procs, redisUrl } = suite;
  afterEach(() => {
    suite.fake.setResponder(() => ({ content: 'ok' }));
  });

  function envFor(extra: Record<string, string> = {}) {
    return daemonEnv({
      REDIS_URL: redisUrl,
      OPENAI_BASE_URL: suite.fake.baseURL,
      MAGPIE_WORKSPACE: suite.workspace,
      ...extra,
    });
  }
  function run(args: string[], env: NodeJS.ProcessEnv): Proc {
    const p = magpie(args, env);
    procs.push(p);
    return p;
  }
  async function daemon(env: NodeJS.ProcessEnv, workerArgs: string[] = []) {
    const gateway = run(['gateway'], env);
    const worker = run(['worker', ...workerArgs], env);
    await Promise.all([gateway.waitFor(/magpie is running/), worker.waitFor(/magpie is running/)]);
    return { gateway, worker };
  }

  it('magpie send -m gets the reply through the bus', async () => {
    suite.fake.setResponder(() => ({ content: 'hello from the model' }));
    const env = envFor();
    await daemon(env);
    const send = run(['send', '-m', 'hi there', '--chat', 'e2e-1', '--timeout', '20s'], env);
    expect(await send.exited).toBe(0);
    expect(send.stdout().trim()).toBe('hello from the model');
    const last = suite.fake.requests.at(-1)?.body.messages.at(-1);
    expect(last.content).toContain('hi there');
  });

  it('three quick messages to one chat: one turn at a time, all reach the model in order', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    suite.fake.setResponder(async () => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 400));
      inFlight -= 1;
      return { content: 'got it' };
    });
    const env = envFor();
    await daemon(env);
    const before = suite.fake.requests.length;
    const mailbox = `${env.MAGPIE_QUEUE_PREFIX}:mailbox:cli:e2e-three`;
    const watcher = new Redis(redisUrl);
    // Three separate processes race to Redis, so each send starts once the previous
    // message is seen on the bus (in the mailbox, or already taken by a turn).
    const seen = (text: string) =>
      waitFor(
        async () => {
          const entries = await watcher.lrange(mailbox, 0, -1);
          // A user message that is this text (the tools' descriptions hold words such as "network").
          const sentToModel = suite.fake.requests
            .slice(before)
            .some((r) =>
              (r.body.messages as Array<{ role: string; content: unknown }>).some(
                (m) => m.role === 'user' && JSON.stringify(m.content).startsWith(`"${text}`),
              ),
            );
          return sentToModel || entries.some((e) => e.includes(`"content":"${text}"`));
        },
        10_000,
        `message "${text}" on the bus`,
        10,
      );
    const sends: Proc[] = [];
    try {
      for (const text of ['one', 'two', 'three']) {
        sends.push(run(['send', '-m', text, '--chat', 'e2e-three', '--timeout', '20s'], env));
        await seen(text);
      }
    } finally {
      watcher.disconnect();
    }
    for (const send of sends) expect(await send.exited).toBe(0);
    expect(maxInFlight).toBe(1);
    const userTexts = (
      (suite.fake.requests.at(-1)?.body.messages ?? []) as Array<{ role: string; content: unknown }>
    )
      .filter((m) => m.role === 'user')
      .map((m) => JSON.stringify(m.content));
    const order = ['one', 'two', 'three'].map((t) => userTexts.findIndex((u) => u.startsWith(`"${t}`)));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(suite.fake.requests.length - before).toBeLessThanOrEqual(3);
    const redis = new Redis(redisUrl);
    try {
      expect(await redis.llen(`${env.MAGPIE_QUEUE_PREFIX}:mailbox:cli:e2e-three`)).toBe(0);
    } finally {
      redis.disconnect();
    }
  });

  it('magpie chat answers each line of piped input in order, through the bus', async () => {
    suite.fake.setResponder((req) => ({ content: `echo: ${req.body.messages.at(-1).content}` }));
    const env = envFor();
    await daemon(env);
    const chat = pipedChat(procs, 'e2e-chat', '20s', env, 'first\nsecond\n');
    expect(await chat.exited).toBe(0);
    const replies = chat.stdout().match(/magpie> .*/g) ?? [];
    expect(replies).toHaveLength(2);
    expect(replies[0]).toContain('first');
    expect(replies[1]).toContain('second');
  });

  it('an open magpie chat shows a message nobody asked for (a reminder) as it arrives', async () => {
    const env = envFor();
    await daemon(env);
    const chat = magpie(['chat', '--chat', 'e2e-reminder'], env, undefined, OPEN_STDIN);
    procs.push(chat);
    await chat.waitFor(/you> /);
    const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
    const outbound = new Queue('outbound-cli', { connection, prefix: env.MAGPIE_QUEUE_PREFIX });
    try {
      const reminder = { id: 'cron-e2e-1', channel: 'cli', chatId: 'e2e-reminder', content: '⏰ call Ana' };
      await outbound.add('send', { ...reminder, kind: 'message', metadata: {} }, { jobId: reminder.id });
      await chat.waitFor(/magpie> ⏰ call Ana/);
    } finally {
      await outbound.close();
      connection.disconnect();
    }
    chat.child.stdin?.end();
    expect(await chat.exited).toBe(0);
  });

  it('a worker killed with SIGKILL mid-turn, then restarted: answered exactly once', async () => {
    let calls = 0;
    suite.fake.setResponder(() =>
      ++calls === 1 ? { content: 'slow', delayMs: 30_000 } : { content: 'redone answer' },
    );
    const env = envFor();
    const fast = ['--lock-duration', '2s', '--stalled-interval', '1s'];
    const { worker } = await daemon(env, fast);
    const before = suite.fake.requests.length;
    const send = run(['send', '-m', 'survive this', '--chat', 'e2e-kill', '--timeout', '30s'], env);
    await suite.fake.waitForRequests(before + 1, 10_000);
    worker.child.kill('SIGKILL');
    await worker.exited;
    const second = run(['worker', ...fast], env);
    await second.waitFor(/magpie is running/);
    expect(await send.exited).toBe(0);
    expect(send.stdout().trim()).toBe('redone answer');

    const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
    const outbound = new Queue('outbound-cli', { connection, prefix: env.MAGPIE_QUEUE_PREFIX });
    try {
      const counts = await outbound.getJobCounts('completed', 'waiting', 'active', 'delayed', 'failed');
      expect(counts).toMatchObject({ completed: 1, waiting: 0, active: 0, delayed: 0, failed: 0 });
      expect(await connection.llen(`${env.MAGPIE_QUEUE_PREFIX}:mailbox:cli:e2e-kill`)).toBe(0);
    } finally {
      await outbound.close();
      connection.disconnect();
    }
  });

  it('a worker killed mid-turn with the default 30 s locks: its turn is handed back at once, answered once', async () => {
    let calls = 0;
    suite.fake.setResponder(() =>
      ++calls === 1 ? { content: 'slow', delayMs: 60_000 } : { content: 'answered again' },
    );
    const env = envFor();
    const { gateway, worker } = await daemon(env);
    const before = suite.fake.requests.length;
    // Well under the lock: without the hand-back (bus/dead-holders.ts) the job would wait 30-45 s.
    const send = run(['send', '-m', 'quickly back', '--chat', 'e2e-handback', '--timeout', '15s'], env);
    await suite.fake.waitForRequests(before + 1, 10_000);
    worker.child.kill('SIGKILL');
    await worker.exited;
    const second = run(['worker'], env);
    await second.waitFor(/magpie is running/);
    expect(await send.exited).toBe(0);
    expect(send.stdout().trim()).toBe('answered again');
    expect(calls).toBe(2);
    // Whichever looked first (the new worker as it started, or the gateway every 3 s) handed it back.
    const logs = [gateway, second].map((p) => p.stdout() + p.stderr()).join('');
    expect(logs).toMatch(/job handed back/);
  });

  it('SIGTERM during a turn: the turn finishes, its reply is delivered, the worker exits 0', async () => {
    suite.fake.setResponder(() => ({ content: 'finished before exit', delayMs: 1_500 }));
    const env = envFor();
    const { worker } = await daemon(env);
    const before = suite.fake.requests.length;
    const send = run(['send', '-m', 'take your time', '--chat', 'e2e-term', '--timeout', '20s'], env);
    await suite.fake.waitForRequests(before + 1, 10_000);
    worker.child.kill('SIGTERM');
    expect(await send.exited).toBe(0);
    expect(send.stdout().trim()).toBe('finished before exit');
    expect(await worker.exited).toBe(0);
    expect(worker.stderr()).toMatch(/magpie stopped/);
  });

  it('magpie send with no daemon running: a clear error and exit 3', async () => {
    const send = run(
      ['send', '-m', 'anyone?', '--timeout', '1s'],
      envFor({ MAGPIE_QUEUE_PREFIX: 'e2e-nobody' }),
    );
    expect(await send.exited).toBe(3);
    expect(send.stderr().trim()).toBe('magpie: no daemon answered within 1s: is `magpie start` running?');
  });

  it('Redis unreachable: one line and exit 3', async () => {
    const send = run(['send', '-m', 'hi'], envFor({ REDIS_URL: 'redis://127.0.0.1:1' }));
    expect(await send.exited).toBe(3);
    const lines = send.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^magpie: Redis at redis:\/\/127\.0\.0\.1:1\/? is unreachable/);
  });

  it('bad config: one line naming the variable and exit 2', async () => {
    const worker = run(['worker'], envFor({ MAGPIE_WORKER_CONCURRENCY: 'lots' }));
    expect(await worker.exited).toBe(2);
    expect(worker.stderr().trim().split('\n')).toHaveLength(1);
    expect(worker.stderr()).toMatch(/MAGPIE_WORKER_CONCURRENCY/);
  });
});

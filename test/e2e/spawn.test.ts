/**
 * spawn end to end through the bus: a `magpie worker` process, real Redis and
 * the fake OpenAI server. The user's message gets an immediate answer; the
 * helper runs as its own job; the worker running it is killed mid-helper and
 * restarted; the helper is redone and its result comes back through the
 * `system` channel as a second message to the same chat — exactly once.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/app/config.js';
import { Bus } from '../../src/bus/bus.js';
import { helperKeys } from '../../src/bus/keys.js';
import { INBOUND_QUEUE } from '../../src/bus/queues.js';
import { silentLogger } from '../../src/log/index.js';
import { daemonSuite } from '../fakes/daemon.js';
import type { RecordedRequest } from '../fakes/openai-server.js';
import { waitFor } from '../fakes/wait-for.js';
import { daemonEnv, magpie } from './daemon-helpers.js';

function lastMessage(req: RecordedRequest): { role: string; content: string } {
  const m = req.body.messages.at(-1);
  return { role: m.role, content: typeof m.content === 'string' ? m.content : JSON.stringify(m.content) };
}

function lastUser(req: RecordedRequest): string {
  const users = req.body.messages.filter((m: { role: string }) => m.role === 'user');
  const m = users.at(-1);
  return typeof m?.content === 'string' ? m.content : '';
}

describe('spawn through the bus', () => {
  const suite = daemonSuite();
  const { procs, redisUrl } = suite;

  it('answers at once, then relays the helper’s result once, across a worker killed mid-helper', async () => {
    let helperCalls = 0;
    suite.fake.setResponder((req) => {
      const last = lastMessage(req);
      const user = lastUser(req);
      if (user.startsWith('[helper task]')) {
        helperCalls += 1;
        return helperCalls === 1
          ? { content: 'too slow', delayMs: 30_000 }
          : { content: 'The answer is 42 (from the helper).' };
      }
      if (user.startsWith('[background task result]'))
        return { content: 'Your research is done: the answer is 42.' };
      if (last.role === 'tool')
        return { content: 'I started a helper on it; I will tell you when it is done.' };
      return {
        toolCalls: [
          {
            name: 'spawn',
            arguments: JSON.stringify({ task: 'find the answer to everything', label: 'answer' }),
          },
        ],
      };
    });
    const env = daemonEnv({
      REDIS_URL: redisUrl,
      OPENAI_BASE_URL: suite.fake.baseURL,
      MAGPIE_WORKSPACE: suite.workspace,
    });
    const prefix = env.MAGPIE_QUEUE_PREFIX!;
    const fast = ['--lock-duration', '2s', '--stalled-interval', '1s'];
    const first = magpie(['worker', ...fast], env);
    procs.push(first);
    await first.waitFor(/magpie is running/);

    const config = parseConfig({
      REDIS_URL: redisUrl,
      MAGPIE_QUEUE_PREFIX: prefix,
      MAGPIE_WORKSPACE: suite.workspace,
    });
    const bus = await Bus.connect({ config, logger: silentLogger() });
    const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
    const outbound = new Queue('outbound-cli', { connection, prefix });
    const replies = async () =>
      (await outbound.getJobs(['waiting', 'active', 'completed', 'delayed', 'failed']))
        .sort((a, b) => a.timestamp - b.timestamp)
        .map((j) => ({
          id: j.id,
          content: String(j.data.content),
          chatId: String(j.data.chatId),
        }));
    try {
      await bus.publishInbound({
        id: 'e2e-spawn-1',
        channel: 'cli',
        chatId: 'spawn-chat',
        content: 'research the answer to everything in the background and tell me when you are done',
      });
      // The immediate answer arrives while the helper's LLM call is still pending.
      await waitFor(async () => (await replies()).length === 1, 20_000, 'the immediate answer');
      expect((await replies())[0]).toMatchObject({
        content: 'I started a helper on it; I will tell you when it is done.',
        chatId: 'spawn-chat',
      });
      await waitFor(async () => helperCalls === 1, 20_000, 'the helper’s first LLM call');
      const running = await connection.hgetall(helperKeys.running(prefix));
      expect(Object.values(running).map((r) => JSON.parse(r).label)).toEqual(['answer']);
      await waitFor(
        async () => (await bus.pendingJobs(INBOUND_QUEUE)) === 0,
        10_000,
        'the first turn to finish',
      );

      first.child.kill('SIGKILL');
      await first.exited;
      const second = magpie(['worker', ...fast], env);
      procs.push(second);
      await second.waitFor(/magpie is running/);

      await waitFor(async () => (await replies()).length >= 2, 30_000, 'the helper’s result message');
      expect(helperCalls).toBe(2);
      await waitFor(
        async () =>
          (await bus.pendingJobs(INBOUND_QUEUE)) === 0 &&
          (await connection.hlen(helperKeys.running(prefix))) === 0,
        10_000,
        'the helper and the result turn to finish',
      );
      const all = await replies();
      expect(all.map((r) => r.content)).toEqual([
        'I started a helper on it; I will tell you when it is done.',
        'Your research is done: the answer is 42.',
      ]);
      expect(all.every((r) => r.chatId === 'spawn-chat')).toBe(true);
      // The result turn saw the helper's text, framed as a background task result.
      const relay = suite.fake.requests.find((r) => lastUser(r).startsWith('[background task result]'))!;
      expect(lastUser(relay)).toContain('The answer is 42 (from the helper).');
      expect(await connection.llen(`${prefix}:mailbox:cli:spawn-chat`)).toBe(0);
      expect(second.stderr() + second.stdout()).toMatch(/helper result published/);
    } finally {
      await outbound.close();
      connection.disconnect();
      await bus.close();
    }
  }, 90_000);
});

/**
 * An approval question outlives everything: `magpie start` asks in a Telegram
 * chat, then the daemon is SIGKILLed and Redis killed and restarted from its
 * append-only file; the daemon started again takes `/approve CODE`, runs the
 * command exactly once and answers exactly once.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, type RecordedRequest, startFakeOpenAI } from '../fakes/openai-server.js';
import { type RedisHandle, startRedis } from '../fakes/redis-server.js';
import { dmUpdate, type FakeTelegram, startFakeTelegram } from '../fakes/telegram-server.js';
import { waitFor } from '../fakes/wait-for.js';
import { build, daemonEnv, magpie, type Proc, stop, tempWorkspace } from './daemon-helpers.js';

/** exec on request; then the tool's answer; anything else echoed. */
function responder(req: RecordedRequest) {
  const messages = req.body.messages as Array<{ role: string; content: unknown }>;
  const last = messages.at(-1);
  if (last?.role === 'tool') return { content: `done: ${String(last.content).slice(0, 200)}` };
  const text = typeof last?.content === 'string' ? last.content : '';
  const run = /run: (.+)$/m.exec(text)?.[1];
  if (run) return { toolCalls: [{ name: 'exec', arguments: JSON.stringify({ command: run }) }] };
  return { content: 'pong' };
}

describe('an approval question across a crash of the daemon and of Redis', () => {
  let openai: FakeOpenAI;
  let telegram: FakeTelegram;
  let redis: RedisHandle;
  let workspace: string;
  const procs: Proc[] = [];
  const owner = { id: 8201, first_name: 'Owner', username: 'owner' };

  beforeAll(async () => {
    build();
    workspace = tempWorkspace();
    openai = await startFakeOpenAI({ responder });
    telegram = await startFakeTelegram({ token: '889:approval-restart' });
    redis = await startRedis();
  }, 120_000);
  afterEach(async () => {
    for (const p of procs.splice(0)) await stop(p, 'SIGKILL');
  });
  afterAll(async () => {
    await redis?.stop();
    await telegram?.close();
    await openai?.close();
  });

  it('SIGKILL while the question waits, everything restarted, then /approve: runs once, answers once', async () => {
    const env = daemonEnv({
      REDIS_URL: redis.url,
      OPENAI_BASE_URL: openai.baseURL,
      MAGPIE_WORKSPACE: workspace,
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_ROOT: telegram.apiRoot,
      TELEGRAM_ALLOW_FROM: `@${owner.username}`,
    });
    const texts = () => telegram.sent(owner.id).map((m) => m.text);
    const first = magpie(['start'], env);
    procs.push(first);
    await first.waitFor(/magpie is running/, 20_000);
    telegram.pushUpdate(dmUpdate(owner, 'run: echo restarted >> restart.txt'));
    await telegram.waitFor(() => texts().some((t) => t.includes('magpie wants to')), 20_000);
    const code = /\/approve ([A-Z2-9]{5})/.exec(texts().join('\n'))?.[1] ?? '';
    expect(code).toMatch(/^[A-Z2-9]{5}$/);

    // The question is stored as sent and its delivery finished (a delivery cut short by the kill would be
    // redone: the bus's at-least-once delivery, not what this test is about).
    const prefix = env.MAGPIE_QUEUE_PREFIX as string;
    const client = new Redis(redis.url);
    await waitFor(
      async () =>
        (await client.hget(`${prefix}:approval:telegram:${owner.id}`, 'asked')) === '1' &&
        (await client.llen(`${prefix}:outbound-telegram:active`)) === 0,
      10_000,
      'the question sent and its delivery finished',
    );
    client.disconnect();
    // The daemon dies with no chance to clean up, and so does Redis; Redis comes back from its AOF.
    await stop(first, 'SIGKILL');
    const { port, dir } = redis;
    redis.process.kill('SIGKILL');
    await new Promise((resolve) => redis.process.once('exit', resolve));
    redis = await startRedis({ port, dir });

    const second = magpie(['start'], env);
    procs.push(second);
    await second.waitFor(/magpie is running/, 20_000);
    telegram.pushUpdate(dmUpdate(owner, `/approve ${code}`));
    await telegram
      .waitFor(() => texts().some((t) => t.startsWith('done:')), 30_000)
      .catch((err: unknown) => {
        throw new Error(`${String(err)}: ${JSON.stringify(texts())}`);
      });
    // Anything sent twice would be queued before the answer to a later message.
    telegram.pushUpdate(dmUpdate(owner, 'ping'));
    await telegram.waitFor(() => texts().includes('pong'), 20_000);

    const file = path.join(workspace, 'restart.txt');
    expect(existsSync(file) ? readFileSync(file, 'utf8') : '').toBe('restarted\n');
    expect(texts().filter((t) => t.startsWith('done:'))).toHaveLength(1);
    expect(texts().filter((t) => t.includes('magpie wants to'))).toHaveLength(1);
    expect(texts()).toContain('Allowed by Owner: going on.');
  }, 120_000);
});

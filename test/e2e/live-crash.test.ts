/**
 * Live replies survive a crash: a `magpie worker` killed (SIGKILL) while its
 * answer is streaming into a Telegram chat is replaced by a second worker;
 * the redone turn continues the preview the first one started, so the chat
 * ends with exactly one message holding the answer.
 */
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { dmUpdate, type FakeTelegram, startFakeTelegram } from '../fakes/telegram-server.js';
import { build, daemonEnv, magpie, type Proc, stop, tempWorkspace } from './daemon-helpers.js';

const FIRST = Array.from({ length: 40 }, (_, i) => `first attempt part ${i}.`).join(' ');
const REDONE = Array.from({ length: 12 }, (_, i) => `Redone **answer** part ${i}.`).join(' ');

describe('live reply across a worker crash', () => {
  let openai: FakeOpenAI;
  let telegram: FakeTelegram;
  let workspace: string;
  const procs: Proc[] = [];
  const owner = { id: 8101, first_name: 'Owner', username: 'owner' };

  beforeAll(async () => {
    build();
    workspace = tempWorkspace();
    openai = await startFakeOpenAI();
    telegram = await startFakeTelegram({ token: '888:crash-token', editIntervalMs: 900 });
  }, 120_000);
  afterEach(async () => {
    for (const p of procs.splice(0)) await stop(p, 'SIGKILL');
  });
  afterAll(async () => {
    await telegram?.close();
    await openai?.close();
  });

  function run(args: string[], env: NodeJS.ProcessEnv): Proc {
    const p = magpie(args, env);
    procs.push(p);
    return p;
  }

  it('a worker killed mid-stream, the turn redone by another: one message, the redone answer', async () => {
    let calls = 0;
    openai.setResponder(() =>
      ++calls === 1
        ? { content: FIRST, pieces: 40, pieceDelayMs: 300 }
        : { content: REDONE, pieces: 6, pieceDelayMs: 250 },
    );
    const env = daemonEnv({
      REDIS_URL: inject('redisUrl'),
      OPENAI_BASE_URL: openai.baseURL,
      MAGPIE_WORKSPACE: workspace,
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_ROOT: telegram.apiRoot,
      TELEGRAM_ALLOW_FROM: `@${owner.username}`,
    });
    const fast = ['--lock-duration', '2s', '--stalled-interval', '1s'];
    const gateway = run(['gateway'], env);
    const worker = run(['worker', ...fast], env);
    await Promise.all([gateway.waitFor(/magpie is running/), worker.waitFor(/magpie is running/)]);

    telegram.pushUpdate(dmUpdate(owner, 'tell me a long story'));
    // The preview is up and has grown at least once: the first attempt is mid-stream.
    await telegram.waitFor(
      () => telegram.edits.some((e) => e.chat_id === String(owner.id) && e.outcome === 'edited'),
      30_000,
    );
    worker.child.kill('SIGKILL');
    await worker.exited;
    expect(telegram.shown(owner.id)[0]).toContain('first attempt part');

    const second = run(['worker', ...fast], env);
    await second.waitFor(/magpie is running/);
    await telegram.waitFor(
      () =>
        telegram.shownMessages(owner.id).some((m) => m.parse_mode === 'HTML' && m.text.includes('part 11.')),
      60_000,
    );
    expect(telegram.sent(owner.id)).toHaveLength(1);
    const shown = telegram.shownMessages(owner.id);
    expect(shown).toHaveLength(1);
    expect(shown[0]!.text).toContain('Redone <b>answer</b> part 0.');
    expect(shown[0]!.text).not.toContain('first attempt');
  }, 120_000);
});

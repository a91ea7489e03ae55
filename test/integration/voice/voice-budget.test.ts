/**
 * Speech against the budget: the characters spoken are priced by
 * MAGPIE_PRICE_TTS per million and counted in the shared store (real Redis)
 * as a call of `tts:<model>`; at a limit the reply is not spoken (the text
 * already went out) and nothing is queued. espeak-ng speaks for real.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { buildVoiceReplies } from '../../../src/app/build-voice.js';
import { Budget } from '../../../src/budget/budget.js';
import { RedisBudgetStore } from '../../../src/bus/budget-store.js';
import { Bus } from '../../../src/bus/bus.js';
import { opsKeys } from '../../../src/bus/keys.js';
import { silentLogger } from '../../../src/log/index.js';
import { toNano } from '../../../src/messages/budget.js';
import type { OutboundMessageInput } from '../../../src/messages/messages.js';
import { createMetrics } from '../../../src/ops/metrics.js';
import { EspeakEngine } from '../../../src/voice/espeak.js';
import { budgetCharges, speechCost } from '../../../src/voice/speech-budget.js';
import { MemoryVoiceChoiceStore } from '../../../src/voice/voice-choice.js';
import { VoiceReplies } from '../../../src/voice/voice-replies.js';
import { testConfig } from '../bus/helpers.js';

let bus: Bus | undefined;
afterEach(async () => {
  await bus?.close();
  bus = undefined;
});

async function setUp(env: Record<string, string>) {
  const config = testConfig(undefined, { MAGPIE_TTS: 'espeak', MAGPIE_TIMEZONE: 'UTC', ...env });
  const logger = silentLogger();
  bus = await Bus.connect({ config, logger });
  const store = new RedisBudgetStore(bus.redis, bus.prefix);
  const budget = new Budget({ config: config.budget, store, timezone: config.timezone, logger });
  const published: OutboundMessageInput[] = [];
  const choices = new MemoryVoiceChoiceStore();
  const replies = new VoiceReplies({
    engine: new EspeakEngine(),
    choices,
    publish: async (m) => {
      published.push(m);
    },
    channels: ['test'],
    charges: budgetCharges(budget, {
      model: 'espeak',
      pricePerMillionChars: config.voice.pricePerMillionChars,
      logger,
    }),
    logger,
  });
  await choices.set('test:b1', 'on');
  return { budget, store, replies, published };
}

const voiceInbound = {
  id: 'cli:m1:1',
  channel: 'cli',
  chatId: 'm1',
  senderId: 'u',
  content: '',
  media: [{ kind: 'audio' as const, mimeType: 'audio/ogg' }],
  isGroup: false,
  receivedAt: new Date().toISOString(),
  metadata: {},
};

const request = (content: string) => ({
  turn: 't1',
  sessionKey: 'test:b1',
  batch: [],
  target: { channel: 'test', chatId: 'b1' },
  content,
  metadata: {},
});

describe('speech and the budget', () => {
  it('charges the characters spoken at MAGPIE_PRICE_TTS per million', async () => {
    const { budget, store, replies, published } = await setUp({ MAGPIE_PRICE_TTS: '15' });
    const outcome = await replies.afterReply(request('Hello there, this is priced.'));
    expect(outcome).toMatchObject({ spoken: true, chars: 28 });
    expect(published).toHaveLength(1);
    const counters = await store.counters('test:b1', budget.period());
    expect(counters.dayCostNano).toBe(toNano(speechCost(28, 15)));
    expect(counters.dayCostNano).toBe(420_000);
    const [day] = await store.days([budget.period().date]);
    expect(JSON.stringify(day)).toContain('tts:espeak');
  });

  it('does not speak once a spending limit would be passed', async () => {
    // 0.0001 a day; 40 characters at 5 per million cost 0.0002.
    const { budget, store, replies, published } = await setUp({
      MAGPIE_PRICE_TTS: '5',
      MAGPIE_BUDGET_DAILY: '0.0001',
    });
    const outcome = await replies.afterReply(request('This sentence has forty characters in it'));
    expect(outcome).toEqual({ spoken: false, reason: 'budget' });
    expect(published).toHaveLength(0);
    expect((await store.counters('test:b1', budget.period())).dayCostNano).toBe(0);
  });

  it('counts the seconds spoken for /metrics (espeak engine as the daemon builds it)', async () => {
    const config = testConfig(undefined, { MAGPIE_TTS: 'espeak', MAGPIE_TTS_VOICE: 'en-gb' });
    bus = await Bus.connect({ config, logger: silentLogger() });
    const replies = await buildVoiceReplies({
      voice: config.voice,
      bus,
      totalsKey: opsKeys.totals(bus.prefix),
      logger: silentLogger(),
    });
    const outcome = await replies!.afterReply({
      ...request('Counting the seconds.'),
      target: { channel: 'cli', chatId: 'm1' },
      batch: [{ ...voiceInbound }],
    });
    expect(outcome.spoken).toBe(true);
    const seconds = outcome.spoken ? outcome.seconds : 0;
    const text = await createMetrics(bus.opsReader).render();
    expect(text).toContain(`magpie_voice_seconds_total{agent="main"} ${seconds}`);
    expect(text).toContain('magpie_voice_characters_total{agent="main"} 21');
    expect(text).toContain('magpie_voice_failures_total{agent="main"} 0');
    // The queued voice message waits on the CLI channel's outbound queue.
    expect(await bus.pendingJobs('outbound-cli', ['waiting'])).toBe(1);
  });
});

/**
 * A spoken reply is a second outbound under `voiceId(turn)`: a turn redone
 * after its voice was queued sends neither twice, one redone after only its
 * text went out (the worker died before speaking) sends the voice once. Real
 * Redis, BullMQ, turn worker and espeak-ng/opusenc; a scripted agent.
 */
import { describe, expect, it } from 'vitest';
import type { Bus } from '../../../src/bus/bus.js';
import { silentLogger } from '../../../src/log/index.js';
import { replyId, turnId, voiceId } from '../../../src/messages/outbound-ids.js';
import { EspeakEngine } from '../../../src/voice/espeak.js';
import { readOggOpus } from '../../../src/voice/ogg.js';
import { MemoryVoiceChoiceStore } from '../../../src/voice/voice-choice.js';
import { VoiceReplies } from '../../../src/voice/voice-replies.js';
import { harnessPerTest, inbound, ScriptedAgent, waitFor } from '../bus/helpers.js';

const voiceNote = { media: [{ kind: 'audio' as const, mimeType: 'audio/ogg', transcript: 'hello' }] };

function voiceReplies(spoken: string[]) {
  return (bus: Pick<Bus, 'publishOutbound' | 'outboundQueued'>) => {
    const engine = new EspeakEngine();
    return new VoiceReplies({
      engine: {
        name: engine.name,
        model: engine.model,
        speak: (text, signal) => {
          spoken.push(text);
          return engine.speak(text, signal);
        },
      },
      choices: new MemoryVoiceChoiceStore(),
      publish: (m) => bus.publishOutbound(m),
      queued: (channel, id) => bus.outboundQueued(channel, id),
      channels: ['test'],
      logger: silentLogger(),
    });
  };
}

describe('spoken replies of redone turns', () => {
  const start = harnessPerTest();

  it('a voice note gets its text, then one OGG/Opus voice message under r-<turn>-voice', async () => {
    const spoken: string[] = [];
    const harness = await start({ agent: new ScriptedAgent(), voice: voiceReplies(spoken) });
    const message = inbound('v1', 'hello there', voiceNote);
    await harness.bus.publishInbound(message);
    await waitFor(() => harness.channel.sent.length === 2, 15_000, 'text and voice');
    const [text, voice] = harness.channel.sent;
    const turn = turnId('test:v1', message.id);
    expect(text).toMatchObject({ id: replyId(turn), content: 'hello there' });
    expect(voice).toMatchObject({ id: voiceId(turn), content: '' });
    const audio = voice!.media![0]!;
    const bytes = Buffer.from(audio.dataUrl!.split(',')[1]!, 'base64');
    expect(bytes.subarray(0, 4).toString('latin1')).toBe('OggS');
    expect(readOggOpus(bytes)!.durationSeconds).toBeCloseTo(audio.durationSeconds!, 1);
    expect(spoken).toEqual(['hello there.']);
  });

  it('a turn redone after its text and voice were queued sends neither again', async () => {
    const spoken: string[] = [];
    const harness = await start({ agent: new ScriptedAgent(), voice: voiceReplies(spoken) });
    const message = inbound('v2', 'again', voiceNote);
    const turn = turnId('test:v2', message.id);
    // As if an earlier attempt had queued both and died before trimming the mailbox.
    const earlier = { channel: 'test', chatId: 'v2' };
    await harness.bus.publishOutbound({ ...earlier, id: replyId(turn), content: 'first attempt' });
    await harness.bus.publishOutbound({ ...earlier, id: voiceId(turn), content: 'first voice' });
    await waitFor(() => harness.channel.sent.length === 2, 5_000, 'earlier attempt delivered');
    await harness.bus.publishInbound(message);
    // The redone turn sees its voice queued before: nothing is spoken (or charged) again.
    await waitFor(
      async () => (await harness.bus.mailbox('test:v2').length()) === 0,
      5_000,
      'mailbox trimmed',
    );
    await waitFor(async () => (await harness.bus.pendingJobs('outbound-test')) === 0, 5_000, 'outbound idle');
    expect(harness.channel.sent.map((m) => m.content)).toEqual(['first attempt', 'first voice']);
    expect(spoken).toEqual([]);
  });

  it('a turn redone after only its text went out sends the voice once', async () => {
    const spoken: string[] = [];
    const harness = await start({ agent: new ScriptedAgent(), voice: voiceReplies(spoken) });
    const message = inbound('v3', 'once more', voiceNote);
    const turn = turnId('test:v3', message.id);
    await harness.bus.publishOutbound({
      channel: 'test',
      chatId: 'v3',
      id: replyId(turn),
      content: 'text went out',
    });
    await waitFor(() => harness.channel.sent.length === 1, 5_000, 'earlier text delivered');
    await harness.bus.publishInbound(message);
    await waitFor(() => harness.channel.sent.length === 2, 15_000, 'the voice');
    await waitFor(
      async () => (await harness.bus.mailbox('test:v3').length()) === 0,
      5_000,
      'mailbox trimmed',
    );
    expect(harness.channel.sent.map((m) => m.id)).toEqual([replyId(turn), voiceId(turn)]);
    expect(harness.channel.sent[1]!.media?.[0]?.mimeType).toBe('audio/ogg');
  });

  it('a text message in a chat left on auto is answered in text only', async () => {
    const spoken: string[] = [];
    const harness = await start({ agent: new ScriptedAgent(), voice: voiceReplies(spoken) });
    await harness.bus.publishInbound(inbound('v4', 'typed'));
    await harness.bus.publishInbound(inbound('v4', 'typed again'));
    await waitFor(
      () => harness.channel.sent.some((m) => m.content.includes('typed again')),
      10_000,
      'answers',
    );
    await waitFor(
      async () => (await harness.bus.mailbox('test:v4').length()) === 0,
      5_000,
      'mailbox trimmed',
    );
    await waitFor(async () => (await harness.bus.pendingJobs('outbound-test')) === 0, 5_000, 'outbound idle');
    expect(harness.channel.sent.every((m) => m.media === undefined)).toBe(true);
    expect(spoken).toEqual([]);
  });
});

/**
 * Which chats a spoken reply goes to: the channels whose descriptors say they play audio, a bot
 * account's instance (`telegram-family`) with its channel, and no other (e-mail never gets one).
 */
import { describe, expect, it } from 'vitest';
import { CHANNELS } from '../../../src/channels/registry.js';
import { silentLogger } from '../../../src/log/index.js';
import { MemoryVoiceChoiceStore } from '../../../src/voice/voice-choice.js';
import { VoiceReplies } from '../../../src/voice/voice-replies.js';

const playing = CHANNELS.filter((c) => c.playsAudio).map((c) => c.name);

function replies() {
  return new VoiceReplies({
    engine: {
      name: 'never',
      model: 'never',
      speak: () => Promise.reject(new Error('not spoken in this test')),
    },
    choices: new MemoryVoiceChoiceStore(),
    publish: async () => undefined,
    channels: playing,
    logger: silentLogger(),
  });
}

const voiceNoteIn = (channel: string) => ({
  turn: 't',
  sessionKey: `${channel}:1`,
  batch: [
    {
      id: `${channel}:1:1`,
      channel,
      chatId: '1',
      senderId: 'u',
      content: '',
      media: [{ kind: 'audio' as const, mimeType: 'audio/ogg' }],
      isGroup: false,
      receivedAt: new Date().toISOString(),
      metadata: {},
    },
  ],
  target: { channel, chatId: '1' },
  content: 'hello',
  metadata: {},
});

describe('the channels a spoken reply goes to', () => {
  it('are the ones whose descriptors play audio', () => {
    expect(playing.sort()).toEqual(
      ['cli', 'discord', 'matrix', 'signal', 'slack', 'telegram', 'web', 'whatsapp'].sort(),
    );
  });

  it.each(['telegram', 'telegram-family', 'discord-work', 'whatsapp'])(
    'a voice note on %s is answered aloud',
    async (channel) => {
      expect(await replies().wanted(voiceNoteIn(channel))).toBe(true);
    },
  );

  it.each(['email', 'api', 'emailish', 'system'])('a voice note on %s is not', async (channel) => {
    expect(await replies().wanted(voiceNoteIn(channel))).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { spokenAudio } from '../../../src/voice/outbound-audio.js';
import { MemoryVoiceChoiceStore, runVoiceCommand } from '../../../src/voice/voice-choice.js';
import { opusAudio } from '../../fakes/opus-audio.js';

const withAudio = (dataUrl: string) => ({
  id: 'r-x-voice',
  media: [{ kind: 'audio' as const, mimeType: 'audio/ogg', dataUrl }],
});

describe('spokenAudio', () => {
  it('decodes an OGG/Opus data: URL and takes the length from the stream, not the message', () => {
    const ogg = opusAudio();
    const audio = spokenAudio({
      id: 'r-x-voice',
      media: [
        {
          kind: 'audio',
          mimeType: 'audio/ogg',
          dataUrl: `data:audio/ogg;base64,${ogg.toString('base64')}`,
          durationSeconds: 999,
        },
      ],
    });
    expect(audio!.bytes.equals(ogg)).toBe(true);
    expect(audio!.durationSeconds).toBeLessThan(10);
  });

  it('is undefined for a message without audio', () => {
    expect(spokenAudio({ id: 'r-x', media: undefined })).toBeUndefined();
  });

  it('refuses audio that is not base64 OGG/Opus, without retries (INVALID_MESSAGE)', () => {
    for (const dataUrl of [
      'https://evil.test/a.ogg',
      'data:text/html;base64,PHNjcmlwdD4=',
      `data:audio/ogg;base64,${Buffer.from('RIFF0000WAVE').toString('base64')}`,
      'data:audio/ogg;base64,!!!',
    ]) {
      expect(() => spokenAudio(withAudio(dataUrl))).toThrow(
        expect.objectContaining({ code: 'INVALID_MESSAGE' }),
      );
    }
  });
});

describe('/voice', () => {
  it('stores on, off and auto per chat, shows the mode, and refuses anything else', async () => {
    const choices = new MemoryVoiceChoiceStore();
    const ctx = { sessionKey: 'telegram:1', choices, speaks: true };
    expect(await runVoiceCommand('', ctx)).toMatch(/^Voice replies: auto /);
    expect(await runVoiceCommand('OFF', ctx)).toBe(
      'Voice replies are off in this chat: answers are text only.',
    );
    expect(await choices.get('telegram:1')).toBe('off');
    expect(await choices.get('telegram:2')).toBe('auto');
    expect(await runVoiceCommand('loud', ctx)).toBe('Say /voice on, /voice off or /voice auto.');
    expect(await choices.get('telegram:1')).toBe('off');
    await runVoiceCommand('auto', ctx);
    expect(await choices.get('telegram:1')).toBe('auto');
  });

  it('says when no engine is set up', async () => {
    const reply = await runVoiceCommand('on', {
      sessionKey: 'k',
      choices: new MemoryVoiceChoiceStore(),
      speaks: false,
    });
    expect(reply).toContain('MAGPIE_TTS=off');
  });
});

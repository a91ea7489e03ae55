import { describe, expect, it } from 'vitest';
import {
  cleanText,
  isAddressedToBot,
  isCommandForOtherBot,
  planMedia,
  type TgMessage,
} from '../../../src/channels/telegram/inbound.js';

const bot = { id: 42, username: 'MagpieBot' };
const group = (extra: Partial<TgMessage>): TgMessage => ({
  message_id: 1,
  chat: { id: -1, type: 'supergroup' },
  from: { id: 7, is_bot: false, first_name: 'Ann' },
  ...extra,
});

describe('telegram inbound', () => {
  it.each<[string, Partial<TgMessage>, string]>([
    [
      'sees a mention anywhere in the text, case-insensitively, and strips it',
      { text: 'hey @magpiebot what is up', entities: [{ type: 'mention', offset: 4, length: 10 }] },
      'hey what is up',
    ],
    [
      'uses caption entities for captioned media',
      { caption: '@MagpieBot look', caption_entities: [{ type: 'mention', offset: 0, length: 10 }] },
      'look',
    ],
    [
      'counts a text_mention of the bot (users without a username) and keeps its visible name',
      { text: 'Magpie, help', entities: [{ type: 'text_mention', offset: 0, length: 6, user: { id: 42 } }] },
      'Magpie, help',
    ],
  ])('%s', (_name, fields, cleaned) => {
    const m = group(fields);
    expect(isAddressedToBot(m, bot)).toBe(true);
    expect(cleanText(m, bot)).toBe(cleaned);
  });

  it('does not count mentions of others or replies to other people', () => {
    const m = group({
      text: '@someone hi',
      entities: [{ type: 'mention', offset: 0, length: 8 }],
      reply_to_message: { message_id: 3, from: { id: 8, is_bot: false, first_name: 'Bo' } },
    });
    expect(isAddressedToBot(m, bot)).toBe(false);
  });

  it('tells commands for this bot from commands for another, whatever the case', () => {
    expect(isCommandForOtherBot(group({ text: '/new@MAGPIEBOT' }), bot)).toBe(false);
    expect(isCommandForOtherBot(group({ text: '/whatever@other_bot\nmore' }), bot)).toBe(true);
    expect(isAddressedToBot(group({ text: '/stop' }), bot)).toBe(true);
    expect(isAddressedToBot(group({ text: '/stop@other_bot' }), bot)).toBe(false);
    expect(isAddressedToBot(group({ text: '/usr/bin is a path' }), bot)).toBe(false);
    expect(isCommandForOtherBot(group({ text: '/new@other_bot' }), bot)).toBe(true);
    expect(cleanText(group({ text: '/new@magpiebot' }), bot)).toBe('/new');
  });

  it('plans the largest photo under the limit and describes what it will not fetch', () => {
    const plans = planMedia(
      group({
        photo: [
          { file_id: 's', width: 90, height: 90, file_size: 100 },
          { file_id: 'm', width: 320, height: 320, file_size: 900 },
          { file_id: 'l', width: 1280, height: 1280, file_size: 5000 },
        ],
        document: { file_id: 'd', file_name: 'a.zip', mime_type: 'application/zip', file_size: 10 },
        audio: { file_id: 'a', mime_type: 'audio/mpeg', file_size: 2000 },
      }),
      1000,
    );
    expect(plans[0]).toMatchObject({ kind: 'image', fileId: 'm', download: true });
    expect(plans[1]).toMatchObject({
      kind: 'audio',
      download: false,
      note: expect.stringContaining('too large'),
    });
    expect(plans[2]).toMatchObject({ kind: 'file', name: 'a.zip', download: false });
    expect(plans[2]!.fileId).toBeUndefined();
  });

  it('treats an image sent as a document as an image', () => {
    const [plan] = planMedia(
      group({ document: { file_id: 'd', file_name: 'p.png', mime_type: 'image/png', file_size: 10 } }),
      1000,
    );
    expect(plan).toMatchObject({ kind: 'image', mimeType: 'image/png', fileId: 'd', download: true });
  });
});

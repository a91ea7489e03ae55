/** A webhook notification read (whatsapp/inbound.ts): which parts are ours, and what each message becomes. */
import { describe, expect, it } from 'vitest';
import { AccessControl, type PairingStore } from '../../../src/channels/access.js';
import {
  decideMessage,
  readNotification,
  type WaMessage,
  type WaNotification,
} from '../../../src/channels/whatsapp/inbound.js';

const OWNER = '491701234567';
const pairing: PairingStore = {
  isApproved: async () => false,
  request: async (request) => ({ status: 'send', code: request.code }),
};
const access = new AccessControl({ channel: 'whatsapp', allowFrom: [OWNER], pairing });
const message = (extra: Partial<WaMessage>): WaMessage => ({
  from: OWNER,
  id: 'wamid.1',
  timestamp: '1700000000',
  type: 'text',
  text: { body: 'hi' },
  ...extra,
});
const decide = (m: WaMessage, name?: string) => decideMessage(m, name, { access });

describe('readNotification', () => {
  const value = (phoneNumberId: string) => ({
    messaging_product: 'whatsapp',
    metadata: { phone_number_id: phoneNumberId },
    contacts: [{ wa_id: OWNER, profile: { name: 'Ada' } }],
    messages: [message({})],
    statuses: [{ id: 'wamid.0', status: 'read', recipient_id: OWNER }],
  });

  it('reads the messages (with profile names) and statuses of our number only', () => {
    const body: WaNotification = {
      object: 'whatsapp_business_account',
      entry: [
        {
          changes: [
            { field: 'messages', value: value('111') },
            { field: 'messages', value: value('222') },
            { field: 'account_update', value: value('111') },
          ],
        },
      ],
    };
    const read = readNotification(body, '111');
    expect(read.messages).toEqual([{ message: message({}), name: 'Ada' }]);
    expect(read.statuses).toEqual([{ id: 'wamid.0', status: 'read', recipient_id: OWNER }]);
    expect(read.otherNumbers).toEqual(['222']);
  });

  it('reads nothing from another object or a malformed body', () => {
    expect(readNotification({ object: 'page', entry: [] }, '111').messages).toEqual([]);
    expect(
      readNotification({ object: 'whatsapp_business_account', entry: 'x' } as never, '111').messages,
    ).toEqual([]);
    expect(
      readNotification({ object: 'whatsapp_business_account', entry: [{ changes: [null as never] }] }, '111')
        .messages,
    ).toEqual([]);
  });
});

describe('decideMessage', () => {
  it('publishes a text as whatsapp:<number>:<id>, named by the profile', async () => {
    expect(await decide(message({}), 'Ada')).toEqual({
      kind: 'publish',
      media: [],
      message: {
        id: `whatsapp:${OWNER}:wamid.1`,
        channel: 'whatsapp',
        chatId: OWNER,
        senderId: OWNER,
        senderName: 'Ada',
        content: 'hi',
        platformMessageId: 'wamid.1',
        isGroup: false,
        receivedAt: '2023-11-14T22:13:20.000Z',
        metadata: { profileName: 'Ada' },
      },
    });
  });

  it('plans images, stickers and voice notes for download, describes other files', async () => {
    const media = async (m: Partial<WaMessage>) => {
      const action = await decide(message(m));
      return action.kind === 'publish' ? { content: action.message.content, media: action.media } : action;
    };
    expect(
      await media({ type: 'image', image: { id: 'm1', mime_type: 'image/png', caption: 'look' } }),
    ).toEqual({
      content: 'look',
      media: [{ kind: 'fetch', mediaId: 'm1', mimeType: 'image/png', name: 'image' }],
    });
    expect(
      await media({ type: 'audio', audio: { id: 'm2', mime_type: 'audio/ogg; codecs=opus', voice: true } }),
    ).toEqual({
      content: '',
      media: [{ kind: 'fetch', mediaId: 'm2', mimeType: 'audio/ogg', name: 'voice note' }],
    });
    expect(await media({ type: 'sticker', sticker: { id: 'm3', mime_type: 'image/webp' } })).toMatchObject({
      media: [{ kind: 'fetch', mimeType: 'image/webp' }],
    });
    expect(
      await media({
        type: 'document',
        document: { id: 'm4', mime_type: 'image/jpeg', filename: 'scan.jpg' },
      }),
    ).toMatchObject({
      media: [{ kind: 'fetch', name: 'scan.jpg' }],
    });
    expect(
      await media({
        type: 'document',
        document: { id: 'm5', mime_type: 'application/pdf', filename: 'a.pdf', caption: 'read' },
      }),
    ).toEqual({
      content: 'read',
      media: [
        {
          kind: 'describe',
          media: {
            kind: 'file',
            mimeType: 'application/pdf',
            name: 'a.pdf',
            note: 'file "a.pdf" (application/pdf) was not opened',
          },
        },
      ],
    });
    expect(
      await media({ type: 'location', location: { latitude: 52.5, longitude: 13.4, name: 'Home' } }),
    ).toEqual({
      content: '[location: 52.5, 13.4 (Home)]',
      media: [],
    });
  });

  it('ignores reactions, unsupported and group messages, and empty ones', async () => {
    expect(await decide(message({ type: 'reaction' }))).toMatchObject({ kind: 'ignore' });
    expect(await decide(message({ type: 'unsupported' }))).toMatchObject({ kind: 'ignore' });
    expect(await decide(message({ group_id: 'g1' }))).toMatchObject({ kind: 'ignore' });
    expect(await decide(message({ text: { body: '  ' } }))).toMatchObject({ kind: 'ignore' });
    expect(await decide(message({ id: undefined }))).toMatchObject({ kind: 'ignore' });
  });

  it('gives a stranger a pairing code, and reads a button reply as a press whoever sent it', async () => {
    expect(await decide(message({ from: '447700900123' }))).toMatchObject({
      kind: 'pairing',
      chatId: '447700900123',
    });
    const press = await decide(
      message({
        from: '447700900123',
        id: 'wamid.2',
        type: 'interactive',
        interactive: { type: 'button_reply', button_reply: { id: '/deny K7QF2', title: 'Deny' } },
        context: { from: '15550100000', id: 'wamid.question' },
      }),
      'Bob',
    );
    expect(press).toEqual({
      kind: 'press',
      press: {
        id: 'whatsapp:447700900123:wamid.2',
        channel: 'whatsapp',
        data: '/deny K7QF2',
        presser: { id: '447700900123', displayName: 'Bob' },
        chatId: '447700900123',
        isGroup: false,
        messageId: 'wamid.question',
        receivedAt: '2023-11-14T22:13:20.000Z',
        metadata: { profileName: 'Bob' },
      },
    });
  });
});

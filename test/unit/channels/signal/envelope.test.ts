/** signal-cli events read or refused (never thrown), and mentions written out. */
import { describe, expect, it } from 'vitest';
import { parseEvent } from '../../../../src/channels/signal/envelope.js';
import { groupChatId, targetOf, withMentions } from '../../../../src/channels/signal/inbound.js';

const envelope = { sourceNumber: '+15552220000', sourceUuid: 'u-1', timestamp: 1700000000000 };

describe('parseEvent', () => {
  it("reads the HTTP daemon's { account, envelope } and the socket's JSON-RPC notification alike", () => {
    const plain = parseEvent(
      JSON.stringify({ account: '+1555', envelope: { ...envelope, dataMessage: { message: 'hi' } } }),
    );
    const wrapped = parseEvent(
      JSON.stringify({
        jsonrpc: '2.0',
        method: 'receive',
        params: { account: '+1555', envelope: { ...envelope, dataMessage: { message: 'hi' } } },
      }),
    );
    for (const parsed of [plain, wrapped]) {
      expect(parsed.ok).toBe(true);
      if (parsed.ok) {
        expect(parsed.event.account).toBe('+1555');
        expect(parsed.event.envelope.dataMessage?.message).toBe('hi');
      }
    }
  });

  it.each([
    ['not JSON', '{"envelope":'],
    ['JSON that is no object', '[1,2]'],
    ['no envelope', '{"account":"+1555"}'],
    ['no timestamp', JSON.stringify({ envelope: { sourceNumber: '+1' } })],
    ['a text that is a number', JSON.stringify({ envelope: { ...envelope, dataMessage: { message: 5 } } })],
    [
      'a mention without offsets',
      JSON.stringify({ envelope: { ...envelope, dataMessage: { message: 'x', mentions: [{ uuid: 'u' }] } } }),
    ],
    [
      'an attachment without id',
      JSON.stringify({ envelope: { ...envelope, dataMessage: { attachments: [{}] } } }),
    ],
  ])('refuses %s with a reason', (_what, data) => {
    const parsed = parseEvent(data);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.reason).not.toBe('');
  });
});

describe('withMentions', () => {
  const self = new Set(['+1555', 'self-uuid']);

  it("takes magpie's own mention out and names the others, offsets in UTF-16 code units", () => {
    // "😀 ￼ ask ￼": the emoji is two code units, so the mentions sit at 3 and 9.
    const text = '😀 \uFFFC ask \uFFFC';
    const mentions = [
      { start: 3, length: 1, uuid: 'self-uuid', number: null, name: null },
      { start: 9, length: 1, uuid: 'u-2', number: '+1666', name: 'Ann' },
    ];
    expect(withMentions(text, mentions, self)).toBe('😀 ask @Ann');
  });

  it('ignores a mention past the end of the text', () => {
    expect(withMentions('hi', [{ start: 5, length: 1, uuid: 'x' }], self)).toBe('hi');
  });
});

describe('chat ids', () => {
  it('keeps a group id without "/" and sends back to the same group id', () => {
    const groupId = Buffer.from([0xfb, 0xff, 0x3e, 0x01, 0x02]).toString('base64');
    expect(groupId).toMatch(/[+/]/);
    const chatId = groupChatId(groupId);
    expect(chatId).not.toMatch(/[/+=]/);
    expect(targetOf(chatId)).toEqual({ groupId });
    expect(targetOf('u-1')).toEqual({ recipient: ['u-1'] });
  });
});

/**
 * The event stream's framing and ordering, and the history's reduction: a
 * text holding line breaks and `event:`/`id:` lines cannot forge a second SSE
 * event; stream ids compare as numbers, not strings; the history keeps only
 * user and assistant texts (tool calls and results left out, image parts
 * named), the most recent ones, with the kept messages no session holds
 * (reminders, /stop) in their place by time, none from before the last /new.
 */
import { describe, expect, it } from 'vitest';
import type { DeliveredWebEvent } from '../../../../src/bus/web-events.js';
import { compareEventIds, sseFrame } from '../../../../src/channels/web/event-stream.js';
import { type ChatLine, chatHistory, withKeptMessages } from '../../../../src/channels/web/history.js';
import type { SessionEntry } from '../../../../src/sessions/types.js';

describe('SSE frames', () => {
  it('puts a kept event on id, event and one data line', () => {
    const frame = sseFrame({
      id: '17-0',
      event: { type: 'message', id: 'm', text: 'hi', kind: 'reply', at: 'now' },
    });
    expect(frame).toBe(
      'id: 17-0\nevent: message\ndata: {"type":"message","id":"m","text":"hi","kind":"reply","at":"now"}\n\n',
    );
    expect(sseFrame({ event: { type: 'typing', active: true } })).toBe(
      'event: typing\ndata: {"type":"typing","active":true}\n\n',
    );
  });

  it('cannot be split by the text: CR, LF and CRLF stay inside the one data line', () => {
    const text = 'a\n\nevent: message\ndata: {"forged":1}\r\n\r\nid: 99-0\rb';
    const frame = sseFrame({ id: '1-0', event: { type: 'live', turn: 't', text, seq: 0 } });
    // Exactly one blank line (the end of the frame) and three field lines.
    expect(frame.split(/\r\n|\r|\n/)).toHaveLength(5);
    expect(frame.endsWith('\n\n')).toBe(true);
    const data = frame.split('\n').find((line) => line.startsWith('data: ')) as string;
    expect(JSON.parse(data.slice(6)).text).toBe(text);
  });
});

describe('stream ids', () => {
  it('compare by time, then sequence, as numbers', () => {
    expect(compareEventIds('9-0', '10-0')).toBeLessThan(0);
    expect(compareEventIds('10-2', '10-10')).toBeLessThan(0);
    expect(compareEventIds('10-10', '10-2')).toBeGreaterThan(0);
    expect(compareEventIds('1700000000000-5', '1700000000000-5')).toBe(0);
    expect(compareEventIds('99999999999999999-0', '99999999999999998-9')).toBeGreaterThan(0);
  });
});

describe('chat history', () => {
  const store = (entries: SessionEntry[]) => ({
    getHistory: async (key: string) => (key === 'web:c' ? entries : []),
  });

  it('keeps user and assistant texts only, image parts named, in order', async () => {
    const lines = await chatHistory(
      store([
        { role: 'user', content: 'look', ts: '2026-01-01T00:00:00Z' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'and this' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
        { role: 'assistant', content: null, toolCalls: [{ id: '1', name: 'read_file', arguments: '{}' }] },
        { role: 'tool', toolCallId: '1', content: 'file text' },
        { role: 'assistant', content: '  ' },
        { role: 'assistant', content: 'Seen.' },
      ] as SessionEntry[]),
      'c',
    );
    expect(lines).toEqual([
      { role: 'user', text: 'look', at: '2026-01-01T00:00:00Z' },
      { role: 'user', text: 'and this\n[image]' },
      { role: 'assistant', text: 'Seen.' },
    ]);
    expect(JSON.stringify(lines)).not.toContain('base64');
  });

  it('returns the most recent `limit` lines, and none for a chat without a session', async () => {
    const entries = Array.from(
      { length: 10 },
      (_, i) => ({ role: 'user', content: `m${i}` }) as SessionEntry,
    );
    expect((await chatHistory(store(entries), 'c', 3)).map((l) => l.text)).toEqual(['m7', 'm8', 'm9']);
    expect(await chatHistory(store(entries), 'other')).toEqual([]);
  });
});

describe('kept messages in the history', () => {
  const lines: ChatLine[] = [
    { role: 'user', text: 'remind me at 10', at: '2026-01-01T09:00:00.000Z' },
    { role: 'assistant', text: 'Will do.', at: '2026-01-01T09:00:01.000Z' },
    { role: 'user', text: 'thanks', at: '2026-01-01T11:00:00.000Z' },
    { role: 'assistant', text: 'You are welcome.', at: '2026-01-01T11:00:01.000Z' },
  ];
  const kept = (id: string, event: DeliveredWebEvent['event']): DeliveredWebEvent => ({ id, event });
  const message = (id: string, text: string, kind: 'reply' | 'message', at: string) =>
    kept(id, { type: 'message', id: `m${id}`, text, kind, at });

  it('puts reminders and /stop (never in a session) in their place by time; replies stay the session’s', () => {
    const merged = withKeptMessages(
      lines,
      [
        message('1-0', 'Will do.', 'reply', '2026-01-01T09:00:01.000Z'),
        message('2-0', '⏰ stretch', 'message', '2026-01-01T10:00:00.000Z'),
        kept('3-0', { type: 'user', id: 'u', text: 'thanks', at: '2026-01-01T11:00:00.000Z' }),
        kept('4-0', { type: 'user', id: 's', text: '/stop', at: '2026-01-01T12:00:00.000Z' }),
        message('5-0', 'Nothing to stop.', 'message', '2026-01-01T12:00:00.500Z'),
      ],
      '5-0',
    );
    expect(merged.map((l) => `${l.role}: ${l.text}`)).toEqual([
      'user: remind me at 10',
      'assistant: Will do.',
      'assistant: ⏰ stretch',
      'user: thanks',
      'assistant: You are welcome.',
      'user: /stop',
      'assistant: Nothing to stop.',
    ]);
  });

  it('leaves out what came after the cursor (the event stream sends it) and what came before the last /new', () => {
    const events = [
      message('1-0', 'old reminder', 'message', '2026-01-01T08:00:00.000Z'),
      kept('2-0', { type: 'user', id: 'n', text: '/NEW', at: '2026-01-01T08:30:00.000Z' }),
      message('3-0', 'new reminder', 'message', '2026-01-01T10:00:00.000Z'),
      message('4-0', 'too new', 'message', '2026-01-01T12:00:00.000Z'),
    ];
    const texts = withKeptMessages([], events, '3-0').map((l) => l.text);
    expect(texts).toEqual(['new reminder']);
    expect(withKeptMessages([], events, undefined)).toEqual([]);
  });

  it('returns the last `limit` lines', () => {
    const merged = withKeptMessages(
      lines,
      [message('1-0', 'late', 'message', '2026-01-02T00:00:00.000Z')],
      '1-0',
      2,
    );
    expect(merged.map((l) => l.text)).toEqual(['You are welcome.', 'late']);
  });
});

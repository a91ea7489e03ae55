/**
 * The event stream's framing and ordering, and the history's reduction: a
 * text holding line breaks and `event:`/`id:` lines cannot forge a second SSE
 * event; stream ids compare as numbers, not strings; the history keeps only
 * user and assistant texts (tool calls and results left out, image parts
 * named), the most recent ones.
 */
import { describe, expect, it } from 'vitest';
import { compareEventIds, sseFrame } from '../../../../src/channels/web/event-stream.js';
import { chatHistory } from '../../../../src/channels/web/history.js';
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

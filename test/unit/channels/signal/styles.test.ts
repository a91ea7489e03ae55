/** Markdown → Signal text and style ranges: offsets in UTF-16 code units, nesting, blocks. */
import { describe, expect, it } from 'vitest';
import { quoteOf, sendParams, signalParts } from '../../../../src/channels/signal/sender.js';
import { type StyledText, toSignalText } from '../../../../src/channels/signal/styles.js';

/** Each range as `STYLE:text it covers`. */
function covered({ text, styles }: StyledText): string[] {
  return styles.map((r) => `${r.style}:${text.slice(r.start, r.start + r.length)}`);
}

describe('toSignalText', () => {
  it('takes the Markdown characters out and styles what they marked', () => {
    const styled = toSignalText('**bold** *italic* `code` ~~gone~~ ||secret||');
    expect(styled.text).toBe('bold italic code gone secret');
    expect(covered(styled)).toEqual([
      'BOLD:bold',
      'ITALIC:italic',
      'MONOSPACE:code',
      'STRIKETHROUGH:gone',
      'SPOILER:secret',
    ]);
  });

  it('counts offsets in UTF-16 code units: an emoji before a word moves it by two', () => {
    const styled = toSignalText('😀 **hi** 👍🏽 *there*');
    expect(styled.text).toBe('😀 hi 👍🏽 there');
    expect(styled.styles).toEqual([
      { start: 3, length: 2, style: 'BOLD' },
      // 👍🏽 is two code points, four code units.
      { start: 11, length: 5, style: 'ITALIC' },
    ]);
    // The same offsets a UTF-16 reader (Signal's apps) would take.
    const utf16 = Buffer.from(styled.text, 'utf16le');
    const at = (r: { start: number; length: number }) =>
      utf16.subarray(r.start * 2, (r.start + r.length) * 2).toString('utf16le');
    expect(styled.styles.map(at)).toEqual(['hi', 'there']);
  });

  it('nests styles: bold inside italics is two ranges over the bold word', () => {
    const styled = toSignalText('*all **of** it*');
    expect(styled.text).toBe('all of it');
    expect(covered(styled)).toEqual(['ITALIC:all of it', 'BOLD:of']);
  });

  it('shows a code block monospace under an italic label naming its language, its text untouched', () => {
    const styled = toSignalText('Look:\n\n```ts\nconst a = 1 < 2 && **b**;\n```');
    expect(styled.text).toBe('Look:\n\nts\nconst a = 1 < 2 && **b**;');
    expect(covered(styled)).toEqual(['ITALIC:ts', 'MONOSPACE:const a = 1 < 2 && **b**;']);
  });

  it('writes headings bold, lists with bullets and numbers, quotes after "> " with their styles moved along', () => {
    const styled = toSignalText(
      '# Title\n\n- one **x**\n  - deeper\n\n1. first\n\n> said **this**\n> and `that`',
    );
    expect(styled.text).toBe('Title\n\n• one x\n  • deeper\n\n1. first\n\n> said this\n> and that');
    expect(covered(styled)).toEqual(['BOLD:Title', 'BOLD:x', 'BOLD:this', 'MONOSPACE:that']);
  });

  it('writes links as their text and address, and keeps characters Markdown would escape', () => {
    expect(toSignalText('[docs](https://x.org) a < b & c \\*').text).toBe('docs (https://x.org) a < b & c *');
  });
});

describe('sending', () => {
  it('splits a long reply under 2,000 characters a part, every part styled on its own', () => {
    const parts = signalParts(`${'**word** '.repeat(400)}`);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(part.text.length).toBeLessThanOrEqual(2000);
      expect(part.text).not.toContain('**');
      for (const r of part.styles) expect(part.text.slice(r.start, r.start + r.length)).toBe('word');
    }
  });

  it('addresses a person by recipient and a group by its id, with ranges as start:length:STYLE', () => {
    const part = toSignalText('**hi**');
    expect(sendParams('+15551234567', part)).toEqual({
      recipient: ['+15551234567'],
      message: 'hi',
      textStyle: ['0:2:BOLD'],
    });
    const groupId = Buffer.from('a group id with / and +').toString('base64');
    const chatId = `group-${Buffer.from(groupId, 'base64').toString('base64url')}`;
    expect(sendParams(chatId, toSignalText('plain'), { timestamp: 5, author: '+1555' })).toEqual({
      groupId,
      message: 'plain',
      quoteTimestamp: 5,
      quoteAuthor: '+1555',
    });
  });

  it('reads what a reply quotes from the inbound platform id, and nothing from anything else', () => {
    expect(quoteOf('1700000000000:+15551234567')).toEqual({
      timestamp: 1700000000000,
      author: '+15551234567',
    });
    expect(quoteOf('not-a-quote')).toBeUndefined();
    expect(quoteOf(undefined)).toBeUndefined();
  });
});

/** splitMessage: limits, boundaries, code fences, unicode. */
import { describe, expect, it } from 'vitest';
import { capParts, MAX_REPLY_PARTS, splitMessage, splitReply } from '../../../src/channels/chunk.js';
import { discordParts } from '../../../src/channels/discord/sender.js';
import { formatForTelegram } from '../../../src/channels/telegram/sender.js';

/** Fence lines of a part, in order. */
function fences(part: string): string[] {
  return part.split('\n').filter((line) => /^ {0,3}```/.test(line));
}

/** True when every opened fence in the part is closed in the same part. */
function balanced(part: string): boolean {
  return fences(part).length % 2 === 0;
}

/** Removes the fence lines the splitter added, so the parts can be compared with the input. */
function words(text: string): string[] {
  return text.split(/\s+/).filter((w) => w !== '' && !w.startsWith('```'));
}

describe('splitMessage', () => {
  it('returns short text unchanged as one part', () => {
    expect(splitMessage('hello **world**', 2000)).toEqual(['hello **world**']);
  });

  it('returns text of exactly the limit as one part and splits one character more', () => {
    const exact = 'a'.repeat(2000);
    expect(splitMessage(exact, 2000)).toEqual([exact]);
    const over = `${'a '.repeat(1000)}b`;
    const parts = splitMessage(over, 2000);
    expect(parts.length).toBe(2);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(2000);
  });

  it('returns nothing for empty or whitespace-only text', () => {
    expect(splitMessage('', 100)).toEqual([]);
    expect(splitMessage(' \n\n ', 100)).toEqual([]);
  });

  it('rejects a limit that is not a positive integer', () => {
    expect(() => splitMessage('x', 0)).toThrow(RangeError);
  });

  it('splits at paragraph breaks before line breaks', () => {
    const p1 = `${'one '.repeat(20).trim()}\nsecond line of first paragraph`;
    const p2 = 'two '.repeat(20).trim();
    const parts = splitMessage(`${p1}\n\n${p2}`, 140);
    expect(parts).toEqual([p1, p2]);
  });

  it('splits at line breaks when a paragraph is too long', () => {
    const lines = Array.from({ length: 10 }, (_, i) => `line ${i} ${'x'.repeat(20)}`);
    const parts = splitMessage(lines.join('\n'), 100);
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(100);
      for (const l of p.split('\n')) expect(lines).toContain(l);
    }
    expect(parts.join('\n')).toBe(lines.join('\n'));
  });

  it('splits a long single line at word boundaries', () => {
    const text = Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');
    const parts = splitMessage(text, 200);
    expect(parts.length).toBeGreaterThan(1);
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(200);
      expect(p.startsWith(' ') || p.endsWith(' ')).toBe(false);
    }
    expect(parts.join(' ')).toBe(text);
  });

  it('cuts hard when there is no boundary at all', () => {
    const text = 'z'.repeat(4500);
    const parts = splitMessage(text, 2000);
    expect(parts.map((p) => p.length)).toEqual([2000, 2000, 500]);
    expect(parts.join('')).toBe(text);
  });

  it('never splits a surrogate pair or an emoji sequence', () => {
    const family = '👨‍👩‍👧‍👦'; // 11 UTF-16 units, one grapheme
    const text = `${'🙂'.repeat(1500)}${family.repeat(50)}日本語`.repeat(2);
    const parts = splitMessage(text, 1999);
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(1999);
      expect(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(p)).toBe(false);
      expect(/^\u200d/.test(p)).toBe(false);
    }
    expect(parts.join('')).toBe(text);
  });

  it('closes and reopens a code fence with its language', () => {
    const code = Array.from({ length: 40 }, (_, i) => `const v${i} = ${i};`).join('\n');
    const text = `Here:\n\n\`\`\`ts\n${code}\n\`\`\`\n\nDone.`;
    const parts = splitMessage(text, 300);
    expect(parts.length).toBeGreaterThan(2);
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(300);
      expect(balanced(p)).toBe(true);
    }
    for (const p of parts.slice(1, -1)) expect(p.startsWith('```ts\n')).toBe(true);
    // Nothing lost: the code lines all survive, in order.
    const lines = parts
      .join('\n')
      .split('\n')
      .filter((l) => l.startsWith('const '));
    expect(lines).toEqual(code.split('\n'));
  });

  it('keeps other fence languages and plain fences', () => {
    const py = Array.from({ length: 30 }, (_, i) => `print(${i})  # python line`).join('\n');
    const plain = Array.from({ length: 30 }, (_, i) => `plain ${i} text`).join('\n');
    const text = `\`\`\`python\n${py}\n\`\`\`\ntext between\n\`\`\`\n${plain}\n\`\`\``;
    const parts = splitMessage(text, 250);
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(250);
      expect(balanced(p)).toBe(true);
      const first = p.split('\n')[0]!;
      if (p.includes('# python line') && !p.includes('text between')) expect(first).toBe('```python');
      if (p.includes('plain ') && !p.includes('text between')) expect(first).toBe('```');
    }
  });

  it('splits a 6,000-character reply with a code block under 2000 with fences balanced', () => {
    const prose = Array.from({ length: 12 }, (_, i) => `Paragraph ${i}: ${'lorem ipsum dolor '.repeat(8)}`);
    const code = Array.from({ length: 120 }, (_, i) => `  console.log("line ${i}", value${i});`).join('\n');
    const text = `${prose.slice(0, 6).join('\n\n')}\n\n\`\`\`js\n${code}\n\`\`\`\n\n${prose.slice(6).join('\n\n')}`;
    expect(text.length).toBeGreaterThan(6000);
    const parts = splitMessage(text, 2000);
    expect(parts.length).toBeGreaterThanOrEqual(4);
    let reopened = 0;
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(2000);
      expect(p.trim()).not.toBe('');
      expect(balanced(p)).toBe(true);
      if (p.startsWith('```js\n')) reopened++;
    }
    expect(reopened).toBeGreaterThanOrEqual(2);
    expect(words(parts.join('\n'))).toEqual(words(text));
    // Indentation inside the code survives the split.
    expect(parts.join('\n')).toContain('\n  console.log("line 45", value45);');
  });

  it('counts the added fences against the limit even for long languages', () => {
    const code = 'x'.repeat(30).concat('\n').repeat(60);
    const text = `\`\`\`typescript-with-a-long-name\n${code}\`\`\``;
    for (const limit of [60, 61, 97, 128]) {
      const parts = splitMessage(text, limit);
      for (const p of parts) {
        expect(p.length).toBeLessThanOrEqual(limit);
        expect(balanced(p)).toBe(true);
      }
    }
  });

  it('handles a fence that opens exactly at a cut and one whose close would not fit', () => {
    const text = `${'a'.repeat(95)}\n\`\`\`sh\n${'echo hi\n'.repeat(30)}\`\`\``;
    const parts = splitMessage(text, 100);
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(100);
      expect(balanced(p)).toBe(true);
    }
    expect(parts[0]).toBe('a'.repeat(95));
  });

  it('treats a ``` line inside a ```` fence as content and reopens with four backticks', () => {
    const inner = Array.from({ length: 20 }, (_, i) => (i === 10 ? '```' : `md line ${i}`)).join('\n');
    const text = `\`\`\`\`markdown\n${inner}\n\`\`\`\``;
    const parts = splitMessage(text, 120);
    expect(parts.length).toBeGreaterThan(1);
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(120);
      expect(p.startsWith('````markdown\n')).toBe(true);
      expect(p.endsWith('\n````')).toBe(true);
    }
  });

  it('produces no empty parts from runs of blank lines', () => {
    const text = `${'a'.repeat(50)}\n\n\n\n\n\n${'b'.repeat(50)}\n\n\n\n${'c'.repeat(50)}`;
    const parts = splitMessage(text, 60);
    expect(parts).toEqual(['a'.repeat(50), 'b'.repeat(50), 'c'.repeat(50)]);
  });

  it('works with tiny limits', () => {
    const text = 'hello world, this is a sentence with ```code``` inside';
    const parts = splitMessage(text, 5);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(5);
    expect(parts.join('').replace(/\s/g, '')).toBe(text.replace(/\s/g, ''));
  });
});

describe('runs of fence characters and the parts bound', () => {
  // Before: 4,500 backticks took 1,002 Telegram messages (2,502 on Discord), 5,000 tildes 1,502 (3,002).
  it.each([
    ['4,500 backticks', '`'.repeat(4500)],
    ['5,000 tildes', '~'.repeat(5000)],
  ])('sends %s as text, in at most 2 parts at 4096 (3 on Discord)', (_, text) => {
    const most = 2;
    const parts = splitMessage(text, 4096);
    expect(parts.length).toBeLessThanOrEqual(most);
    expect(parts.join('')).toBe(text);
    expect(formatForTelegram(text).length).toBeLessThanOrEqual(3);
    expect(discordParts(text).length).toBeLessThanOrEqual(3);
  });

  it('keeps lines of 40 backticks as text instead of empty code blocks', () => {
    const text = `${'`'.repeat(40)}\n`.repeat(200);
    const parts = splitMessage(text, 4096);
    expect(parts.length).toBe(3);
    expect(parts.join('\n').replace(/\s/g, '')).toBe(text.replace(/\s/g, ''));
  });

  it('still treats a fence of up to 32 characters as a fence', () => {
    const fence = '`'.repeat(32);
    const body = Array.from({ length: 300 }, (_, i) => `const x${i} = ${i};`).join('\n');
    const parts = splitMessage(`${fence}ts\n${body}\n${fence}`, 2000);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(part.startsWith(`${fence}ts\n`)).toBe(true);
      expect(part.endsWith(`\n${fence}`)).toBe(true);
    }
  });

  it('cuts a reply needing more than MAX_REPLY_PARTS parts, the last part saying so', () => {
    const text = Array.from({ length: 3000 }, (_, i) => `line ${i} ${'word '.repeat(10)}`).join('\n');
    const all = splitMessage(text, 2000);
    expect(all.length).toBeGreaterThan(MAX_REPLY_PARTS);
    const parts = splitReply(text, 2000);
    expect(parts).toHaveLength(MAX_REPLY_PARTS);
    expect(parts.slice(0, -1)).toEqual(all.slice(0, MAX_REPLY_PARTS - 1));
    expect(parts.at(-1)).toBe(
      `[Reply cut: it was ${text.length.toLocaleString('en-US')} characters, ${all.length} messages long; only the first 9 were sent.]`,
    );
    expect(discordParts(text)).toEqual(parts);
    expect(formatForTelegram(text)).toHaveLength(MAX_REPLY_PARTS);
    // Telegram renders only the parts it sends, and its notice still counts the whole reply's parts.
    const telegramAll = splitMessage(text, 3500);
    expect(formatForTelegram(text).at(-1)!.plain).toBe(
      `[Reply cut: it was ${text.length.toLocaleString('en-US')} characters, ${telegramAll.length} messages long; only the first 9 were sent.]`,
    );
  });

  it('leaves MAX_REPLY_PARTS parts or fewer alone', () => {
    const parts = ['a', 'b', 'c'];
    expect(capParts(parts, (n) => n, 3, 3)).toBe(parts);
    expect(capParts([...parts, 'd'], (n) => n, 4, 3)).toEqual([
      'a',
      'b',
      expect.stringContaining('[Reply cut'),
    ]);
  });
});

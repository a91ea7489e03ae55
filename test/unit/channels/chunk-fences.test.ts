/**
 * splitMessage and code fences as CommonMark has them: no part that is only an
 * empty code block, ~~~ fences like ``` fences, indentation up to 3 spaces, no
 * backtick in a backtick fence's info string, an unclosed block running to the
 * end; and the Telegram rendering of split tilde blocks.
 */
import { describe, expect, it } from 'vitest';
import { splitMessage } from '../../../src/channels/chunk.js';
import { closes, type OpenFence, parseOpening } from '../../../src/channels/fences.js';
import { toTelegramHtml } from '../../../src/channels/format/telegram-html.js';
import { formatForTelegram } from '../../../src/channels/telegram/sender.js';
import { checkTelegramHtml } from '../../fakes/telegram-server.js';

/** The non-fence, non-blank lines of a text (what a reader sees), in order. */
function contentLines(text: string): string[] {
  const out: string[] = [];
  let open: OpenFence | undefined;
  for (const line of text.split('\n')) {
    if (!open) {
      open = parseOpening(line);
      if (!open && line.trim() !== '') out.push(line);
    } else if (closes(line, open)) open = undefined;
    else if (line.trim() !== '') out.push(line);
  }
  return out;
}

/** The words a reader sees, in order (lines may be cut at spaces between parts). */
function words(text: string): string[] {
  return contentLines(text)
    .join(' ')
    .split(/\s+/)
    .filter((w) => w !== '');
}

/** The fence open at the end of a part (undefined when every block it opens is closed). */
function openAtEnd(part: string): OpenFence | undefined {
  let open: OpenFence | undefined;
  for (const line of part.split('\n')) {
    if (!open) open = parseOpening(line);
    else if (closes(line, open)) open = undefined;
  }
  return open;
}

/** A part that shows nothing: only fence lines and blank lines. */
function onlyEmptyBlocks(part: string): boolean {
  return contentLines(part).length === 0;
}

describe('splitMessage: no part is only an empty code block', () => {
  it('a block whose first line is longer than the limit does not leave "```txt\\n```" before it', () => {
    const text = `\`\`\`txt\n${'y'.repeat(150)}`;
    const parts = splitMessage(text, 100);
    expect(parts.length).toBe(2);
    for (const part of parts) {
      expect(onlyEmptyBlocks(part)).toBe(false);
      expect(part.startsWith('```txt\n')).toBe(true);
      expect(part.length).toBeLessThanOrEqual(100);
      expect(openAtEnd(part)).toBeUndefined();
    }
    expect(parts.join('').replace(/```txt\n|\n```/g, '')).toBe('y'.repeat(150));
  });

  it('a cut right after an opening line moves before it: no empty block trails the prose', () => {
    const text = `${'a'.repeat(60)}\n\`\`\`py\n${'print(1)\n'.repeat(10)}\`\`\``;
    const parts = splitMessage(text, 70);
    expect(parts[0]).toBe('a'.repeat(60));
    for (const part of parts.slice(1)) expect(part.startsWith('```py\nprint(1)')).toBe(true);
    expect(words(parts.join('\n'))).toEqual(words(text));
  });

  it('a block whose real (longer) closing line starts the next part is not reopened empty', () => {
    const text = `\`\`\`ts\n${'const a = 1;\n'.repeat(7)}\`\`\`\`\`\`\`\`\`\`\n${'after '.repeat(20)}`;
    const parts = splitMessage(text, 100);
    for (const part of parts) {
      expect(onlyEmptyBlocks(part)).toBe(false);
      expect(part.startsWith('```ts\n```')).toBe(false);
    }
    expect(parts[1]!.startsWith('after')).toBe(true);
    expect(words(parts.join('\n'))).toEqual(words(text));
  });

  it('an empty code block in a long reply is not a part of its own', () => {
    const text = `intro\n${'p '.repeat(40)}\n\n~~~\n~~~\n\n\`\`\`js\n\n\`\`\`\n\n${'q '.repeat(40)}`;
    const parts = splitMessage(text, 90);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(onlyEmptyBlocks(part)).toBe(false);
    expect(words(parts.join('\n'))).toEqual(words(text));
  });

  it('the Telegram formatting of such a reply has no part Telegram would refuse as empty', () => {
    const text = `\`\`\`txt\n${'y'.repeat(5000)}\n\`\`\`\n\n${'z '.repeat(100)}`;
    for (const part of formatForTelegram(text)) {
      expect(checkTelegramHtml(part.html)).toBeUndefined();
      expect(part.html.replace(/<[^>]+>/g, '').trim()).not.toBe('');
      expect(part.plain).not.toMatch(/^```txt\n```$/);
    }
  });
});

describe('splitMessage: ~~~ fences', () => {
  const code = Array.from({ length: 30 }, (_, i) => `print("line ${i}")`).join('\n');

  it('closes a split tilde block with ~~~ and reopens it with its info string', () => {
    const text = `Intro\n\n~~~python title="x"\n${code}\n~~~\n\nDone.`;
    const parts = splitMessage(text, 200);
    expect(parts.length).toBeGreaterThan(2);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(200);
      expect(openAtEnd(part)).toBeUndefined();
      expect(part).not.toMatch(/^```/m);
    }
    for (const part of parts.slice(1, -1)) {
      expect(part.startsWith('~~~python title="x"\n')).toBe(true);
      expect(part.endsWith('\n~~~')).toBe(true);
    }
    expect(words(parts.join('\n'))).toEqual(words(text));
  });

  it('a ``` line inside a tilde block is content, and a ~~~ line inside a backtick block too', () => {
    const inner = Array.from({ length: 20 }, (_, i) => (i % 5 === 2 ? '```' : `md line ${i}`)).join('\n');
    const tilde = splitMessage(`~~~markdown\n${inner}\n~~~`, 80);
    expect(tilde.length).toBeGreaterThan(1);
    for (const part of tilde) {
      expect(part.startsWith('~~~markdown\n')).toBe(true);
      expect(part.endsWith('\n~~~')).toBe(true);
    }
    expect(contentLines(tilde.join('\n'))).toEqual(contentLines(`~~~markdown\n${inner}\n~~~`));

    const innerTilde = inner.replaceAll('```', '~~~');
    const ticks = splitMessage(`\`\`\`\n${innerTilde}\n\`\`\``, 80);
    for (const part of ticks) {
      expect(part.startsWith('```\n')).toBe(true);
      expect(part.endsWith('\n```')).toBe(true);
    }
    expect(
      ticks
        .join('\n')
        .split('\n')
        .filter((l) => l === '~~~').length,
    ).toBe(4);
  });

  it('only a tilde fence at least as long closes: ~~~ inside ~~~~ is content, ~~~~~ closes', () => {
    const body = Array.from({ length: 16 }, (_, i) => (i === 8 ? '~~~' : `row ${i} ${'-'.repeat(10)}`)).join(
      '\n',
    );
    const text = `~~~~ md\n${body}\n~~~~~\nafter the block ${'w '.repeat(30)}`;
    const parts = splitMessage(text, 90);
    const inBlock = parts.filter((p) => p.includes('row '));
    for (const part of inBlock) {
      expect(part.startsWith('~~~~ md\n')).toBe(true);
      expect(openAtEnd(part)).toBeUndefined();
    }
    expect(parts.some((p) => p.split('\n').includes('~~~'))).toBe(true);
    expect(parts.at(-1)!.startsWith('~~~~')).toBe(false);
    expect(words(parts.join('\n'))).toEqual(words(text));
  });
});

describe('splitMessage: CommonMark fence rules', () => {
  const rows = Array.from({ length: 30 }, (_, i) => `value_${i} = compute(${i})`).join('\n');

  it('recognises a fence indented up to 3 spaces (closing one too), not 4', () => {
    const three = splitMessage(`   \`\`\`py\n${rows}\n   \`\`\`\nend`, 150);
    for (const part of three.filter((p) => p.includes('value_'))) {
      expect(part.startsWith('```py\n')).toBe(true);
      expect(openAtEnd(part)).toBeUndefined();
    }
    const four = splitMessage(`    \`\`\`py\n${rows}\n    \`\`\`\nend`, 150);
    // Four spaces: an indented line, not a fence, so nothing is reopened.
    for (const part of four.slice(1)) expect(part.startsWith('```')).toBe(false);
  });

  it('a backtick line whose info string holds a backtick opens nothing; a tilde one may', () => {
    const text = `\`\`\`not a \`fence\`\n${rows}`;
    for (const part of splitMessage(text, 150).slice(1)) expect(part.startsWith('```')).toBe(false);
    const tilde = splitMessage(`~~~info with \`ticks\`\n${rows}\n~~~`, 150);
    for (const part of tilde) expect(part.startsWith('~~~info with `ticks`\n')).toBe(true);
  });

  it('an unclosed fence runs to the end: every part is closed and reopened with its info', () => {
    const text = `Look:\n\n~~~sh\n${'echo hi\n'.repeat(40)}`;
    const parts = splitMessage(text, 100);
    expect(parts.length).toBeGreaterThan(2);
    for (const part of parts.slice(1)) {
      expect(part.startsWith('~~~sh\n')).toBe(true);
      expect(part.endsWith('\n~~~')).toBe(true);
      expect(part.length).toBeLessThanOrEqual(100);
    }
    expect(words(parts.join('\n'))).toEqual(words(text));
  });

  it('a closing fence with text after it does not close the block', () => {
    const text = `\`\`\`\n${rows}\n\`\`\` not a close\n${rows}\n\`\`\``;
    const parts = splitMessage(text, 200);
    for (const part of parts) {
      expect(part.startsWith('```\n')).toBe(true);
      expect(openAtEnd(part)).toBeUndefined();
    }
  });
});

describe('splitMessage: fence invariants over generated replies', () => {
  it('every part fits, closes what it opens, shows something, and nothing is lost', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)]!;
    const pieces = ['```', '```ts', '~~~', '~~~~ py', '````', '', '', '  ```', '```a`b', 'text', '~~~~~'];
    for (let round = 0; round < 250; round++) {
      const lines = Array.from({ length: 5 + Math.floor(random() * 60) }, () =>
        random() < 0.5 ? pick(pieces) : 'word '.repeat(Math.floor(random() * 25)).trim(),
      );
      const text = lines.join('\n');
      const limit = pick([40, 64, 100, 250]);
      const parts = splitMessage(text, limit);
      if (text.length <= limit) continue;
      for (const part of parts) {
        expect(part.length).toBeLessThanOrEqual(limit);
        expect(openAtEnd(part)).toBeUndefined();
        expect(onlyEmptyBlocks(part)).toBe(false);
      }
      expect(parts.flatMap(words)).toEqual(words(text));
    }
  });
});

describe('Telegram HTML: ~~~ blocks', () => {
  it('renders a tilde block as <pre><code> with its language, or <pre> without', () => {
    expect(toTelegramHtml('~~~python\nprint(1 < 2)\n~~~')).toBe(
      '<pre><code class="language-python">print(1 &lt; 2)</code></pre>',
    );
    expect(toTelegramHtml('~~~\nplain <b>\n~~~~')).toBe('<pre>plain &lt;b&gt;</pre>');
    expect(toTelegramHtml('   ~~~ts\nconst x = 1;\n   ~~~')).toBe(
      '<pre><code class="language-ts">const x = 1;</code></pre>',
    );
  });

  it('every part of a split tilde block renders as code Telegram accepts', () => {
    const code = Array.from({ length: 600 }, (_, i) => `let v${i} = "<${i}>" & x;`).join('\n');
    const parts = formatForTelegram(`Here:\n\n~~~rust\n${code}\n~~~\n\nDone.`);
    expect(parts.length).toBeGreaterThan(2);
    for (const part of parts) {
      expect(checkTelegramHtml(part.html)).toBeUndefined();
      expect(part.html).not.toContain('~~~');
    }
    for (const part of parts.slice(1, -1)) {
      expect(part.html.startsWith('<pre><code class="language-rust">')).toBe(true);
    }
  });
});

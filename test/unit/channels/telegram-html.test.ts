import { describe, expect, it } from 'vitest';
import { escapeHtml, toTelegramHtml } from '../../../src/channels/format/telegram-html.js';
import { formatForTelegram } from '../../../src/channels/telegram/sender.js';
import { checkTelegramHtml } from '../../fakes/telegram-server.js';

describe('toTelegramHtml', () => {
  it('renders bold, italic, strike and inline code', () => {
    expect(toTelegramHtml('**b** _i_ ~~s~~ `a<b`')).toBe('<b>b</b> <i>i</i> <s>s</s> <code>a&lt;b</code>');
  });

  it('renders a fenced block as pre with its language class, escaped', () => {
    expect(toTelegramHtml('```ts\nif (a < b && c) {}\n```')).toBe(
      '<pre><code class="language-ts">if (a &lt; b &amp;&amp; c) {}</code></pre>',
    );
    expect(toTelegramHtml('```\nplain <x>\n```')).toBe('<pre>plain &lt;x&gt;</pre>');
  });

  it('renders links with an escaped href and drops unsafe schemes', () => {
    expect(toTelegramHtml('[site](https://x.org/?a=1&b="2")')).toBe(
      '<a href="https://x.org/?a=1&amp;b=&quot;2&quot;">site</a>',
    );
    expect(toTelegramHtml('[bad](javascript:alert(1))')).toBe('bad');
  });

  it('renders headings as bold and quotes as blockquote', () => {
    expect(toTelegramHtml('# Title\n\n> said\n> this')).toBe(
      '<b>Title</b>\n\n<blockquote>said\nthis</blockquote>',
    );
  });

  it('renders lists as text bullets and numbers, nested lists indented', () => {
    expect(toTelegramHtml('- a\n- b\n  - c\n\n3. x\n4. y')).toBe('• a\n• b\n  • c\n\n3. x\n4. y');
  });

  it('escapes raw HTML and stray angle brackets instead of passing them through', () => {
    const html = toTelegramHtml('<script>alert(1)</script> and 1 < 2 > 0 & <u>u</u>');
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;');
    expect(html).toContain('1 &lt; 2 &gt; 0 &amp;');
    expect(checkTelegramHtml(html)).toBeUndefined();
  });

  it('keeps entities Telegram understands but escapes unknown ones', () => {
    expect(toTelegramHtml('a &amp; b &nbsp; c')).toBe('a &amp; b &amp;nbsp; c');
  });

  it('produces HTML the Telegram parser accepts for a mixed document', () => {
    const doc = [
      '# Report <draft>',
      '**Bold _nested italic_** and `code` with [a link](http://a.b/c?d&e)',
      '| a | b |\n|---|---|\n| <1> | 2 |',
      '- [x] done\n- [ ] todo',
      '---',
      '```python\nprint("<hi>")\n```',
    ].join('\n\n');
    const html = toTelegramHtml(doc);
    expect(checkTelegramHtml(html)).toBeUndefined();
    expect(html).toContain('<pre><code class="language-python">print("&lt;hi&gt;")</code></pre>');
    expect(html).toContain('☑ done');
  });

  it('escapeHtml escapes exactly & < >', () => {
    expect(escapeHtml(`<a href="x">&'</a>`)).toBe(`&lt;a href="x"&gt;&amp;'&lt;/a&gt;`);
  });
});

describe('formatForTelegram', () => {
  it('keeps a short reply as one part with its Markdown as the fallback', () => {
    expect(formatForTelegram('hi **there**')).toEqual([{ html: 'hi <b>there</b>', plain: 'hi **there**' }]);
  });

  it('splits a 6000-character reply with a code block: parts < 4096, fences balanced, language kept', () => {
    const prose = Array.from({ length: 20 }, (_, i) => `Paragraph ${i} ${'words '.repeat(20)}`).join('\n\n');
    const code = Array.from({ length: 130 }, (_, i) => `const v${i} = ${i} < 10 && ok;`).join('\n');
    const reply = `${prose}\n\n\`\`\`ts\n${code}\n\`\`\`\n\nThe end.`;
    expect(reply.length).toBeGreaterThan(6000);
    const parts = formatForTelegram(reply);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(part.html.length).toBeLessThan(4096);
      expect(checkTelegramHtml(part.html)).toBeUndefined();
      expect((part.plain.match(/^```/gm) ?? []).length % 2).toBe(0);
    }
    const withCode = parts.filter((p) => p.html.includes('const v'));
    expect(withCode.length).toBeGreaterThan(1);
    for (const p of withCode) expect(p.html).toContain('<code class="language-ts">');
    const text = parts.map((p) => p.html).join('\n');
    expect(text).toContain('const v0 = 0 &lt; 10');
    expect(text).toContain('const v129 = 129 &lt; 10');
    expect(parts.at(-1)!.html).toContain('The end.');
  });

  it('re-splits a part whose escaping pushes it over the limit', () => {
    const reply = '<&>'.repeat(1100); // 3300 chars of Markdown → 13200 chars of HTML
    const parts = formatForTelegram(reply);
    for (const part of parts) expect(part.html.length).toBeLessThanOrEqual(4096);
    expect(
      parts
        .map((p) => p.plain)
        .join('')
        .replace(/\s/g, ''),
    ).toBe(reply);
  });
});

describe('toTelegramHtml nesting', () => {
  it('flattens a quote inside a quote (Telegram cannot nest blockquotes)', () => {
    const html = toTelegramHtml('> outer\n>\n> > inner');
    expect(html).toBe('<blockquote>outer\n\ninner</blockquote>');
    expect(checkTelegramHtml(html)).toBeUndefined();
  });
});

/**
 * The chat page's Markdown renderer, exactly the bytes served as
 * `/chat/render.js`, imported as an ES module: hostile HTML from the model or
 * the user comes out as text (no tag, no attribute, no javascript: link),
 * and the constructs it knows — fences (``` and ~~~, closed or still
 * streaming), inline code, bold, italics, links, line breaks — come out as
 * their markup.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RENDER_SCRIPT } from '../../../../src/channels/web/assets/render-script.js';

type Render = (text: string) => string;
let render: Render;
let escapeHtml: Render;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-render-'));
  const file = path.join(dir, 'render.mjs');
  writeFileSync(file, RENDER_SCRIPT);
  const module = (await import(/* @vite-ignore */ pathToFileURL(file).href)) as {
    renderMarkdown: Render;
    escapeHtml: Render;
  };
  render = module.renderMarkdown;
  escapeHtml = module.escapeHtml;
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every tag name in the HTML. */
function tags(html: string): string[] {
  return [...html.matchAll(/<\/?([a-zA-Z][\w-]*)/g)].map((m) => (m[1] as string).toLowerCase());
}

/** Every attribute name in the HTML's tags. */
function attributes(html: string): string[] {
  return [...html.matchAll(/<[a-zA-Z][^>]*>/g)].flatMap((tag) =>
    [...tag[0].matchAll(/\s([a-zA-Z-]+)=/g)].map((m) => m[1] as string),
  );
}

const ALLOWED_TAGS = new Set(['p', 'br', 'pre', 'code', 'strong', 'em', 'del', 'a']);

const HOSTILE = [
  '<script>alert(1)</script>',
  '<img src=x onerror=alert(1)>',
  '<IMG SRC=x OnError="alert(1)">',
  '<svg/onload=alert(1)>',
  '<iframe src="javascript:alert(1)"></iframe>',
  '"><script>alert(1)</script>',
  "'><img src=x onerror=alert(1)>",
  '[click](javascript:alert(1))',
  '[click](JaVaScRiPt:alert(1))',
  '[click](data:text/html,<script>alert(1)</script>)',
  '[x](https://a.example/" onmouseover="alert(1))',
  'https://a.example/"onmouseover="alert(1)',
  '`<script>alert(1)</script>`',
  '```html\n<script>alert(1)</script>\n```',
  '```"><script>alert(1)</script>\ncode\n```',
  '~~~\n</code></pre><img src=x onerror=alert(1)>\n~~~',
  '**<b onclick=alert(1)>bold</b>**',
  '_<i onclick=alert(1)>_',
  '<a href="javascript:alert(1)">link</a>',
  '&lt;script&gt; already escaped',
  '\u0000<script>alert(1)</script>\u0000',
  '\u00000\u0000 slot marker',
  '<style>body{display:none}</style>',
  '<!-- comment --><base href="https://evil.example/">',
];

describe('the chat renderer', () => {
  it('escapes &, <, >, " and \'', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });

  it('shows hostile HTML as text: only its own tags, only href/rel/target/class attributes, only http(s) links', () => {
    for (const text of HOSTILE) {
      const html = render(text);
      for (const tag of tags(html)) expect(ALLOWED_TAGS.has(tag), `${text} → ${html}`).toBe(true);
      for (const attr of attributes(html))
        expect(['href', 'rel', 'target', 'class'], `${text} → ${html}`).toContain(attr);
      for (const href of html.matchAll(/href="([^"]*)"/g))
        expect(href[1], `${text} → ${html}`).toMatch(/^https?:\/\//);
      expect(html).not.toMatch(/<(script|img|svg|iframe|style|base|b |i )/i);
    }
  });

  it('keeps the hostile text readable', () => {
    expect(render('<script>alert(1)</script>')).toBe('<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>');
    expect(render('<img src=x onerror=alert(1)>')).toBe('<p>&lt;img src=x onerror=alert(1)&gt;</p>');
    expect(render('&lt;')).toBe('<p>&amp;lt;</p>');
  });

  it('renders fenced code with ``` and ~~~, the language as a class, the code escaped', () => {
    expect(render('before\n```js\nlet a = 1 < 2 && b;\n```\nafter')).toBe(
      '<p>before</p><pre><code class="lang-js">let a = 1 &lt; 2 &amp;&amp; b;</code></pre><p>after</p>',
    );
    expect(render('~~~\n**not bold**\n~~~')).toBe('<pre><code>**not bold**</code></pre>');
    // A fence closes only with its own character, at least as long.
    expect(render('````\n```\ninner\n````')).toBe('<pre><code>```\ninner</code></pre>');
  });

  it('runs an unclosed fence to the end (an answer still streaming in)', () => {
    expect(render('look:\n```py\nprint(1)\nprint(2)')).toBe(
      '<p>look:</p><pre><code class="lang-py">print(1)\nprint(2)</code></pre>',
    );
  });

  it('renders inline code without formatting inside it', () => {
    expect(render('run `a **b** <c>` now')).toBe('<p>run <code>a **b** &lt;c&gt;</code> now</p>');
  });

  it('renders bold, italics and strike-through', () => {
    expect(render('**bold** and *it* and _it2_ and __b2__ and ~~gone~~')).toBe(
      '<p><strong>bold</strong> and <em>it</em> and <em>it2</em> and <strong>b2</strong> and <del>gone</del></p>',
    );
    expect(render('snake_case_name stays and 2*3*4 too')).toBe('<p>snake_case_name stays and 2*3*4 too</p>');
  });

  it('links http and https only, opening a new tab without an opener', () => {
    expect(render('[docs](https://example.com/a?b=1&c=2)')).toBe(
      '<p><a href="https://example.com/a?b=1&amp;c=2" rel="noopener noreferrer" target="_blank">docs</a></p>',
    );
    expect(render('see http://example.com/x.')).toBe(
      '<p>see <a href="http://example.com/x" rel="noopener noreferrer" target="_blank">http://example.com/x</a>.</p>',
    );
    expect(render('[x](ftp://example.com/f)')).toBe('<p>[x](ftp://example.com/f)</p>');
    expect(render('[x](javascript:alert(1))')).toBe('<p>[x](javascript:alert(1))</p>');
  });

  it('breaks lines within a paragraph and starts a paragraph after a blank line', () => {
    expect(render('one\ntwo\n\nthree')).toBe('<p>one<br>two</p><p>three</p>');
    expect(render('a\r\nb')).toBe('<p>a<br>b</p>');
  });

  it('shows headings bold and bullets as •', () => {
    expect(render('# Title\n- first\n* second')).toBe(
      '<p class="heading">Title</p><p>• first<br>• second</p>',
    );
  });
});

/** Markdown → WhatsApp's formatting (format/whatsapp.ts) and the parts a reply is sent as (whatsapp/sender.ts). */
import { describe, expect, it } from 'vitest';
import { toWhatsApp } from '../../../src/channels/format/whatsapp.js';
import { buttonTitle } from '../../../src/channels/whatsapp/buttons.js';
import { WHATSAPP_TEXT_LIMIT, whatsappParts } from '../../../src/channels/whatsapp/sender.js';

describe('toWhatsApp', () => {
  it.each([
    ['**bold** *it* _it_ ~~strike~~ ~strike~', '*bold* _it_ _it_ ~strike~ ~strike~'],
    ['__bold__ and ***both***', '*bold* and _*both*_'],
    ['**bold _nested_ inside**', '*bold _nested_ inside*'],
    ['`a<b && c>d`', '`a<b && c>d`'],
    ['a < b & c &amp; d', 'a < b & c &amp; d'],
    ['[docs](https://x.org/?a=1&b=2)', 'docs (https://x.org/?a=1&b=2)'],
    ['<https://x.org> and www.x.org', 'https://x.org and www.x.org'],
    ['[write](mailto:me@x.org) or me@x.org', 'write (me@x.org) or me@x.org'],
    ['![a cat](https://x.org/cat.png)', 'a cat (https://x.org/cat.png)'],
    ['# Title', '*Title*'],
    ['## **Bold** title', '*Bold title*'],
    ['1. one\n2. two', '1. one\n2. two'],
    ['3. three\n4. four', '3. three\n4. four'],
    ['- a\n  - b\n- c', '- a\n   - b\n- c'],
    ['* star item', '- star item'],
    ['- [ ] todo\n- [x] done', '- ☐ todo\n- ☑ done'],
    ['> quoted\n> lines', '> quoted\n> lines'],
    ['para one\n\npara two', 'para one\n\npara two'],
    ['line  \nbreak', 'line\nbreak'],
    ['---', '———'],
    ['| a | b |\n|---|---|\n| 1 | 2 |', '```\na | b\n1 | 2\n```'],
    ['\\*not bold\\*', '*not bold*'],
    ['snake_case_name', 'snake_case_name'],
  ])('%j → %j', (markdown, whatsapp) => {
    expect(toWhatsApp(markdown)).toBe(whatsapp);
  });

  it('keeps a fenced block as written (monospace), its language on the fence line', () => {
    expect(toWhatsApp('```ts\nif (a < b && **c**) { _x_ }\n```')).toBe(
      '```ts\nif (a < b && **c**) { _x_ }\n```',
    );
    expect(toWhatsApp('```\nplain\n```')).toBe('```\nplain\n```');
  });
});

describe('whatsappParts', () => {
  it('splits a long reply under 4,096 characters, code fences balanced in every part', () => {
    const code = Array.from({ length: 400 }, (_, i) => `x${i} = ${i};`).join('\n');
    const parts = whatsappParts(`${'**Intro** words. '.repeat(300)}\n\n\`\`\`js\n${code}\n\`\`\``);
    expect(parts.length).toBeGreaterThanOrEqual(2);
    for (const { text, actions } of parts) {
      expect(text.length).toBeLessThanOrEqual(WHATSAPP_TEXT_LIMIT);
      expect(text.split('\n').filter((l) => l.startsWith('```')).length % 2).toBe(0);
      expect(actions).toBeUndefined();
    }
    expect(parts[0]!.text).toMatch(/^\*Intro\* words\./);
  });

  it('puts the buttons on the last part, cut to the 1,024 characters of an interactive body', () => {
    const actions = [{ label: 'Deny', command: '/deny K7QF2' }];
    expect(whatsappParts('Allow it?', actions)).toEqual([{ text: 'Allow it?', actions }]);
    const parts = whatsappParts(`${'Long question words. '.repeat(80)}\n\nAllow it?`, actions);
    expect(parts.map((p) => p.actions)).toEqual([undefined, actions]);
    expect(parts[1]!.text.length).toBeLessThanOrEqual(1024);
    expect(parts[1]!.text.endsWith('Allow it?')).toBe(true);
  });

  it('cuts a button title to 20 characters', () => {
    expect(buttonTitle('Allow once')).toBe('Allow once');
    expect(buttonTitle('Always allow git push origin')).toBe('Always allow git pu…');
    expect([...buttonTitle('Always allow 🚀🚀🚀🚀🚀🚀🚀🚀🚀')]).toHaveLength(20);
  });
});

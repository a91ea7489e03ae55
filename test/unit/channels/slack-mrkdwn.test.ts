/** Markdown → Slack mrkdwn (format/slack-mrkdwn.ts) and the parts a reply is sent as (slack/sender.ts). */
import { describe, expect, it } from 'vitest';
import { toSlackMrkdwn } from '../../../src/channels/format/slack-mrkdwn.js';
import { SLACK_TEXT_LIMIT, slackParts } from '../../../src/channels/slack/sender.js';

describe('toSlackMrkdwn', () => {
  it.each([
    ['**bold** *it* ~~strike~~', '*bold* _it_ ~strike~'],
    ['`a<b && c>d`', '`a&lt;b &amp;&amp; c&gt;d`'],
    ['[docs](https://x.org/?a=1|2)', '<https://x.org/?a=1%7C2|docs>'],
    ['[bad](javascript:alert(1))', 'bad'],
    ['# Title', '*Title*'],
    ['1. one\n2. two', '1. one\n2. two'],
    ['- a\n  - b', '• a\n    • b'],
    ['> quoted <b>', '> quoted &lt;b&gt;'],
    ['<@U123> & <!channel>', '&lt;@U123&gt; &amp; &lt;!channel&gt;'],
  ])('%j → %j', (markdown, mrkdwn) => {
    expect(toSlackMrkdwn(markdown)).toBe(mrkdwn);
  });

  it('keeps a fenced block whole, escaped, its language on the fence line', () => {
    expect(toSlackMrkdwn('```ts\nif (a < b && **c**) {}\n```')).toBe(
      '```ts\nif (a &lt; b &amp;&amp; **c**) {}\n```',
    );
  });
});

describe('slackParts', () => {
  it('splits a long reply under the limit, each part mrkdwn with its code fences balanced', () => {
    const code = Array.from({ length: 200 }, (_, i) => `x${i} = ${i};`).join('\n');
    const parts = slackParts(`${'**Intro** words. '.repeat(150)}\n\n\`\`\`js\n${code}\n\`\`\``);
    expect(parts.length).toBeGreaterThanOrEqual(2);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(SLACK_TEXT_LIMIT + 100);
      expect(part.split('\n').filter((l) => l.startsWith('```')).length % 2).toBe(0);
    }
    expect(parts[0]).toMatch(/^\*Intro\* words\./);
  });
});

/**
 * Every parser of untrusted text, fed inputs built to make it super-linear.
 *
 * The daemon has one thread: a parser that takes seconds on a page, a memory
 * file, a SKILL.md or a command the model sends freezes every chat. Each row
 * below runs one parser on each adversarial input (test/fakes/adversarial.ts,
 * about 1 MB each unless the row says otherwise) and asserts it finishes within
 * the row's bound. The bounds are generous for a loaded 2-core machine (figures
 * in the comments were measured there) yet far below the seconds the old
 * regexes took, so a quadratic parser fails here.
 *
 * New parsers of untrusted text (mail, webhooks, another channel's formatting)
 * join here: add one row.
 */
import { describe, expect, it } from 'vitest';
import { splitMessage } from '../../../src/channels/chunk.js';
import { discordParts } from '../../../src/channels/discord/sender.js';
import { parseAuthResults, verifySender } from '../../../src/channels/email/auth-results.js';
import { stripQuoted } from '../../../src/channels/email/quotes.js';
import { hasContent as fenceHasContent } from '../../../src/channels/fences.js';
import { toSlackMrkdwn } from '../../../src/channels/format/slack-mrkdwn.js';
import { toTelegramHtml } from '../../../src/channels/format/telegram-html.js';
import { toWhatsApp } from '../../../src/channels/format/whatsapp.js';
import { slackParts } from '../../../src/channels/slack/sender.js';
import { formatForTelegram } from '../../../src/channels/telegram/sender.js';
import { whatsappParts } from '../../../src/channels/whatsapp/sender.js';
import { noteChunks, sessionChunks } from '../../../src/memory/search/chunks.js';
import { LocalClock } from '../../../src/memory/search/dates.js';
import { hasContent as memoryHasContent } from '../../../src/memory/store.js';
import { readFrontMatter } from '../../../src/skills/front-matter.js';
import { parseSkill } from '../../../src/skills/loader.js';
import { denyReason, MAX_COMMAND_CHARS } from '../../../src/tools/exec-policy.js';
import { htmlToText } from '../../../src/tools/html-text.js';
import { adversarialInputs } from '../../fakes/adversarial.js';

const MB = 1_000_000;

interface Row {
  /** The parser and where its untrusted text comes from. */
  name: string;
  parse: (text: string) => unknown;
  /** Input size. @defaultValue 1 MB */
  bytes?: number;
  /** The bound for one input, in ms. */
  maxMs: number;
}

const ROWS: Row[] = [
  // A fetched web page. Old regexes: >6 s on 1 MB of `<!--` or `<a href="`; now ≤ 0.2 s.
  { name: 'htmlToText (web_fetch page)', parse: htmlToText, maxMs: 1500 },
  // MEMORY.md and daily notes, written from model output. Old: >6 s on `<!--`; now ~15 ms.
  { name: 'memory hasContent', parse: memoryHasContent, maxMs: 1000 },
  // The memory search index chunks notes and session logs (both hold what pages and users said).
  { name: 'memory index noteChunks', parse: noteChunks, maxMs: 1500 },
  {
    name: 'memory index sessionChunks',
    parse: (t) =>
      sessionChunks(
        `${JSON.stringify({ role: 'user', content: t, ts: '2026-11-25T10:00:00Z' })}\n`,
        1,
        new LocalClock('UTC'),
      ),
    maxMs: 1500,
  },
  // A SKILL.md's front matter value. Old: >6 s on a line of spaces; now refused over 16 KiB.
  {
    name: 'front matter',
    parse: (t) => readFrontMatter(`name: x\ndescription: ${t}`).catch(() => undefined),
    maxMs: 500,
  },
  {
    name: 'SKILL.md (parseSkill)',
    parse: (t) => parseSkill('SKILL.md', 'x', `---\nname: x\ndescription: ${t}\n---\nbody`),
    maxMs: 1000,
  },
  // A received mail's Authentication-Results (any sender writes one) and its body.
  { name: 'Authentication-Results (parseAuthResults)', parse: parseAuthResults, maxMs: 1000 },
  {
    name: 'Authentication-Results (verifySender, 20 headers)',
    parse: (t) =>
      verifySender(
        Array.from({ length: 20 }, () => `mx.test; ${t}`),
        {
          authservId: 'mx.test',
          require: 'dkim',
          fromDomain: 'example.com',
        },
      ),
    maxMs: 1000,
  },
  { name: 'mail quotes (stripQuoted)', parse: stripQuoted, maxMs: 1500 },
  // The exec deny list, just under its cap (longer commands are refused unread).
  // Old: 8.8 s on `a(){` x16,000; now ~0.2 s.
  {
    name: 'exec deny list',
    parse: (t) => denyReason(t, { workspace: '/tmp/ws' }),
    bytes: MAX_COMMAND_CHARS - 16,
    maxMs: 1500,
  },
  { name: 'exec deny list (over the cap)', parse: (t) => denyReason(t), maxMs: 200 },
  // Replies (model output, which quotes what users and pages say).
  { name: 'fences hasContent', parse: fenceHasContent, maxMs: 1500 },
  {
    name: 'splitMessage (2000)',
    parse: (t) => splitMessage(t, 2000),
    maxMs: 3000,
  },
  { name: 'Discord parts', parse: discordParts, maxMs: 3000 },
  { name: 'Telegram HTML', parse: toTelegramHtml, bytes: MB / 4, maxMs: 3000 },
  { name: 'Slack mrkdwn', parse: toSlackMrkdwn, bytes: MB / 4, maxMs: 3000 },
  { name: 'Slack parts (slackParts)', parse: slackParts, maxMs: 5000 },
  { name: 'WhatsApp formatting', parse: toWhatsApp, bytes: MB / 4, maxMs: 3000 },
  {
    name: 'WhatsApp parts (whatsappParts)',
    parse: (t) => whatsappParts(t, [{ label: 'Deny', command: '/deny K7QF2' }]),
    maxMs: 5000,
  },
  {
    name: 'Telegram parts (formatForTelegram)',
    parse: (t) => formatForTelegram(t),
    maxMs: 5000,
  },
];

describe('parsers of untrusted text stay fast on adversarial input', () => {
  for (const row of ROWS) {
    const inputs = adversarialInputs(row.bytes ?? MB);
    for (const [input, text] of Object.entries(inputs)) {
      it(`${row.name}: ${input} (${text.length} chars) within ${row.maxMs} ms`, async () => {
        const start = performance.now();
        await row.parse(text);
        const ms = performance.now() - start;
        expect(ms, `${row.name} took ${Math.round(ms)} ms on ${input}`).toBeLessThan(row.maxMs);
      });
    }
  }
});

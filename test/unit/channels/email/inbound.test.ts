/** Reading a mail: noise, the allow-list, threads, the user's own words, attachments. */
import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { type DecideMailContext, decideMail, isAllowed } from '../../../../src/channels/email/inbound.js';
import { stripQuoted } from '../../../../src/channels/email/quotes.js';
import { shortHash } from '../../../../src/messages/short-hash.js';
import { dmarcPass, rawMail } from '../../../fakes/smtp-server.js';

const ctx: DecideMailContext = {
  allowFrom: ['*@example.com'],
  ownAddress: 'magpie@bot.test',
  authservId: 'mx.test',
  requireAuth: 'dmarc',
  maxMediaBytes: 1000,
  fallbackId: '<1.2@fallback>',
};

async function decide(raw: string, context = ctx) {
  return decideMail(await simpleParser(raw), context);
}

const mail = (body: string, extra: Partial<Parameters<typeof rawMail>[0]> = {}) =>
  rawMail({
    from: 'Ann <Ann@Example.com>',
    messageId: '<own@example.com>',
    body,
    headers: [dmarcPass('mx.test', 'example.com'), ...(extra.headers ?? [])],
    ...extra,
  });

describe('decideMail', () => {
  it('publishes a trusted mail as its own thread, keyed by the sender and a hash of its id', async () => {
    const decision = await decide(mail('hello', { subject: 'Plans' }));
    expect(decision).toMatchObject({
      kind: 'publish',
      message: {
        id: 'email:<own@example.com>',
        channel: 'email',
        chatId: 'ann@example.com',
        threadId: shortHash('<own@example.com>', 16),
        content: 'Subject: Plans\n\nhello',
        platformMessageId: '<own@example.com>',
      },
      route: { subject: 'Plans', references: ['<own@example.com>'] },
    });
  });

  it("continues the thread of References' first id, under the base subject", async () => {
    const decision = await decide(
      mail('again', { subject: 'Re: Re: Plans', references: ['<root@example.com>', '<b@example.com>'] }),
    );
    expect(decision).toMatchObject({
      kind: 'publish',
      message: { threadId: shortHash('<root@example.com>', 16), content: 'again' },
      route: { subject: 'Plans', references: ['<root@example.com>', '<b@example.com>', '<own@example.com>'] },
    });
  });

  it('takes a command on the first line as the whole message', async () => {
    const decision = await decide(mail('/approve K7QF2\n\nthanks\n-- \nAnn'));
    expect(decision).toMatchObject({ kind: 'publish', message: { content: '/approve K7QF2' } });
  });

  it.each([
    ['an auto-reply', { headers: ['Auto-Submitted: auto-replied'] }, 'auto-submitted'],
    ['bulk mail', { headers: ['Precedence: bulk'] }, 'bulk'],
    ['list mail', { headers: ['List-Id: <x.example.com>'] }, 'list'],
    ['a bounce', { from: 'MAILER-DAEMON@example.com' }, 'bounce'],
    ['magpie itself', { from: 'magpie@bot.test' }, 'own'],
    ["magpie's header", { headers: ['X-Magpie-Reply: 1'] }, 'own'],
    ['a stranger', { from: 'eve@elsewhere.example' }, 'not-allowed'],
  ])('ignores %s', async (_name, extra, reason) => {
    expect(await decide(mail('hi', extra))).toMatchObject({ kind: 'ignore', reason });
  });

  it('ignores a From the receiving server did not authenticate', async () => {
    const forged = rawMail({ from: 'ann@example.com', messageId: '<f@x>', body: 'hi', headers: [] });
    expect(await decide(forged)).toMatchObject({ kind: 'ignore', reason: 'unauthenticated' });
  });

  it('hands on an image within the cap and describes one over it', async () => {
    const boundary = 'b1';
    const small = Buffer.alloc(10, 1).toString('base64');
    const big = Buffer.alloc(2000, 1).toString('base64');
    const part = (name: string, data: string) =>
      [
        `--${boundary}`,
        `Content-Type: image/png; name="${name}"`,
        'Content-Transfer-Encoding: base64',
        `Content-Disposition: attachment; filename="${name}"`,
        '',
        data,
      ].join('\r\n');
    const raw = [
      dmarcPass('mx.test', 'example.com'),
      'From: ann@example.com',
      'Message-ID: <att@example.com>',
      'MIME-Version: 1.0',
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain',
      '',
      'see attached',
      part('small.png', small),
      part('big.png', big),
      `--${boundary}--`,
      '',
    ].join('\r\n');
    const decision = await decide(raw);
    if (decision.kind !== 'publish') throw new Error(decision.detail);
    expect(decision.message.media).toMatchObject([
      { kind: 'image', name: 'small.png', dataUrl: `data:image/png;base64,${small}` },
      { kind: 'image', name: 'big.png', note: expect.stringContaining('too large') },
    ]);
  });
});

describe('isAllowed', () => {
  it('takes an address, *@domain and *', () => {
    expect(isAllowed('ann@example.com', ['ANN@example.com'])).toBe(true);
    expect(isAllowed('ann@example.com', ['*@example.com'])).toBe(true);
    expect(isAllowed('ann@example.com.evil', ['*@example.com'])).toBe(false);
    expect(isAllowed('ann@example.com', ['*'])).toBe(true);
    expect(isAllowed('ann@example.com', [])).toBe(false);
  });
});

describe('stripQuoted', () => {
  it('drops quoted lines, the On … wrote: line (also wrapped), Outlook history and the signature', () => {
    expect(stripQuoted('Answer\n\nOn Mon, 1 Jun 2026, Bob\n<b@x> wrote:\n> old\n> older')).toBe('Answer');
    expect(stripQuoted('Inline\n> q\nmine\n-- \nsig')).toBe('Inline\nmine');
    expect(stripQuoted('Top\n-----Original Message-----\nFrom: x\nold')).toBe('Top');
  });
});

/**
 * E-mail end to end: mail delivered into a real IMAP mailbox (Dovecot) →
 * real adapter (imapflow, mailparser) → real Bus (Redis) → turn worker and
 * agent → fake OpenAI → outbound queue → adapter (nodemailer) → a local SMTP
 * server. What every channel must do is the Channel contract
 * (test/contract/email.contract.test.ts); these are e-mail's own cases:
 * threads and their headers, who is believed, loops, downtime, quoted text,
 * SMTP refusals.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { RedisEmailStore } from '../../../src/bus/email-store.js';
import { outboundQueueName } from '../../../src/bus/queues.js';
import { silentLogger } from '../../../src/log/index.js';
import { roleConfig } from '../../fakes/config.js';
import { type DovecotHandle, startDovecot } from '../../fakes/dovecot.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { stopRoleAndFakes } from '../../fakes/role.js';
import { dmarcPass, type FakeSmtp, rawMail, startFakeSmtp } from '../../fakes/smtp-server.js';
import { waitFor } from '../../fakes/wait-for.js';

const AUTHSERV = 'mx.test';
const DOMAIN = 'example.com';
const TURN_MS = 20_000;

let dovecot: DovecotHandle;
let smtp: FakeSmtp;
let openai: FakeOpenAI;
let role: RunningRole | undefined;
let workspace: string;
const prefix = `test-${randomUUID()}`;
const run = randomUUID().slice(0, 8);

const address = (name: string) => `${name}-${run}@${DOMAIN}`;
const id = (name: string) => `<${name}-${randomUUID()}@${DOMAIN}>`;
const mailsTo = (to: string) => smtp.mails.filter((m) => m.to.includes(to));
const modelTexts = () => openai.requests.map(lastUserText).join('\n');

async function startMagpie(): Promise<RunningRole> {
  const config = roleConfig(
    { workspace, openai, prefix },
    {
      EMAIL_IMAP_URL: dovecot.url,
      EMAIL_SMTP_URL: smtp.url,
      EMAIL_FROM: 'Magpie <magpie@bot.test>',
      EMAIL_ALLOW_FROM: `*@${DOMAIN}`,
      EMAIL_AUTHSERV_ID: AUTHSERV,
    },
  );
  return startRole({ role: 'start', config, logger: silentLogger(), concurrency: 4 });
}

/** A mail from an allowed sender, DMARC passed at the receiving server. */
function trusted(
  from: string,
  body: string,
  extra: { messageId?: string; references?: string[]; subject?: string } = {},
) {
  return rawMail({
    from: `Owner <${from}>`,
    messageId: extra.messageId ?? id('m'),
    body,
    headers: [dmarcPass(AUTHSERV, DOMAIN)],
    ...(extra.references ? { references: extra.references } : {}),
    ...(extra.subject ? { subject: extra.subject } : {}),
  });
}

beforeAll(async () => {
  dovecot = await startDovecot();
  smtp = await startFakeSmtp();
  openai = await startFakeOpenAI({
    responder: (req) => ({ content: `echo: ${lastUserText(req).slice(-80)}` }),
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-email-e2e-'));
  // Sent while magpie is down (never started): answered once it starts.
  await dovecot.deliver(trusted(address('early'), 'sent while you were away', { subject: 'Early' }));
  role = await startMagpie();
}, 60_000);

afterAll(() => stopRoleAndFakes(role, [smtp, openai, { close: () => dovecot.stop() }], workspace));

describe('e-mail through the bus', () => {
  it('answers mail that arrived before magpie started, once, and marks it \\Seen', async () => {
    await smtp.waitFor(() => mailsTo(address('early')).length === 1, TURN_MS);
    expect(mailsTo(address('early'))[0]!.text).toContain('sent while you were away');
    await waitFor(async () => [...(await dovecot.flags()).values()].some((f) => f.has('\\Seen')), TURN_MS);
  });

  it('keeps a thread of three mails in one conversation, with In-Reply-To, References and Re:', async () => {
    const from = address('thread');
    const root = id('root');
    await dovecot.deliver(trusted(from, 'first in the thread', { messageId: root, subject: 'Plans' }));
    await smtp.waitFor(() => mailsTo(from).length === 1, TURN_MS);
    const second = id('second');
    await dovecot.deliver(
      trusted(from, 'second in the thread', { messageId: second, references: [root], subject: 'Re: Plans' }),
    );
    await smtp.waitFor(() => mailsTo(from).length === 2, TURN_MS);
    const third = id('third');
    await dovecot.deliver(
      trusted(from, 'third in the thread', {
        messageId: third,
        references: [root, second],
        subject: 'Re: Plans',
      }),
    );
    await smtp.waitFor(() => mailsTo(from).length === 3, TURN_MS);
    const replies = mailsTo(from);
    expect(replies.map((m) => m.subject)).toEqual(['Re: Plans', 'Re: Plans', 'Re: Plans']);
    expect(replies.map((m) => m.inReplyTo)).toEqual([root, second, third]);
    expect(replies[2]!.references).toEqual([root, second, third]);
    for (const reply of replies) {
      expect(reply.header('auto-submitted')).toBe('auto-replied');
      expect(reply.html).toContain('<p>');
    }
    // One session: the third turn's request carries the first two messages as history.
    const last = openai.requests.at(-1)!.body.messages as Array<{ role: string; content: unknown }>;
    const history = JSON.stringify(last);
    expect(history).toContain('first in the thread');
    expect(history).toContain('second in the thread');
  });

  it('does not answer a forged From: no Authentication-Results, a foreign authserv-id, or a pass under our name below our own fail (written by the sender)', async () => {
    const store = new RedisEmailStore(role!.bus.redis, prefix);
    const before = (await store.ignored()).unauthenticated ?? 0;
    const from = address('forged');
    const forged = (headers: string[], body: string) =>
      rawMail({ from: `Owner <${from}>`, messageId: id('f'), body, headers });
    await dovecot.deliver(forged([], 'forged without any header'));
    await dovecot.deliver(
      forged([dmarcPass('mx.attacker.example', DOMAIN)], 'forged with a foreign authserv-id'),
    );
    await dovecot.deliver(
      forged(
        [
          `Authentication-Results: ${AUTHSERV}; dmarc=fail header.from=${DOMAIN}`,
          dmarcPass(AUTHSERV, DOMAIN),
        ],
        'forged pass below our fail',
      ),
    );
    await waitFor(
      async () => ((await store.ignored()).unauthenticated ?? 0) === before + 3,
      TURN_MS,
      'three ignored',
    );
    // A later trusted mail is answered: the forged ones, taken before it, were not.
    const marker = address('forged-marker');
    await dovecot.deliver(trusted(marker, 'marker after the forgeries'));
    await smtp.waitFor(() => mailsTo(marker).length === 1, TURN_MS);
    expect(mailsTo(from)).toEqual([]);
    expect(modelTexts()).not.toContain('forged');
  });

  it('does not answer an auto-reply, a bounce or list mail', async () => {
    const from = address('auto');
    const withHeaders = (headers: string[], body: string, sender = `Owner <${from}>`) =>
      rawMail({ from: sender, messageId: id('a'), body, headers: [dmarcPass(AUTHSERV, DOMAIN), ...headers] });
    await dovecot.deliver(withHeaders(['Auto-Submitted: auto-replied'], 'I am out of office'));
    await dovecot.deliver(withHeaders(['Precedence: bulk'], 'bulk newsletter'));
    await dovecot.deliver(withHeaders(['List-Id: <news.example.com>'], 'list digest'));
    await dovecot.deliver(withHeaders([], 'delivery failed', `Mail Delivery <MAILER-DAEMON@${DOMAIN}>`));
    const marker = address('auto-marker');
    await dovecot.deliver(trusted(marker, 'marker after the auto mail'));
    await smtp.waitFor(() => mailsTo(marker).length === 1, TURN_MS);
    expect(mailsTo(from)).toEqual([]);
    expect(smtp.mails.filter((m) => m.to.includes(`mailer-daemon@${DOMAIN}`))).toEqual([]);
    for (const text of ['out of office', 'bulk newsletter', 'list digest', 'delivery failed']) {
      expect(modelTexts()).not.toContain(text);
    }
  });

  it('strips quoted history and the signature before the model sees the mail', async () => {
    const from = address('quoted');
    const body = [
      'My actual question',
      '',
      'On Mon, 1 Jun 2026 at 10:00, Magpie <magpie@bot.test> wrote:',
      '> quoted secret history',
      '> more quoted lines',
      '',
      '-- ',
      'Signature line private',
    ].join('\n');
    await dovecot.deliver(trusted(from, body));
    await smtp.waitFor(() => mailsTo(from).length === 1, TURN_MS);
    const seen = modelTexts();
    expect(seen).toContain('My actual question');
    expect(seen).not.toContain('quoted secret history');
    expect(seen).not.toContain('wrote:');
    expect(seen).not.toContain('Signature line private');
  });

  it('retries a reply the SMTP server refused with a 4xx, and delivers it once', async () => {
    const from = address('smtp4xx');
    const attempts = smtp.attempts;
    smtp.refuse(451, 1);
    await dovecot.deliver(trusted(from, 'try again later please'));
    await smtp.waitFor(() => mailsTo(from).length === 1, TURN_MS);
    expect(smtp.attempts - attempts).toBe(2);
  });

  it('fails a reply refused with a 5xx at once: not retried', async () => {
    const from = address('smtp5xx');
    const attempts = smtp.attempts;
    const queue = new Queue(outboundQueueName('email'), { connection: role!.bus.redis, prefix });
    try {
      const failedBefore = await queue.getFailedCount();
      smtp.refuse(550, 5);
      await dovecot.deliver(trusted(from, 'this one is refused'));
      await waitFor(
        async () => (await queue.getFailedCount()) === failedBefore + 1,
        TURN_MS,
        'the failed job',
      );
      const [failed] = await queue.getFailed(0, 0);
      expect(failed?.attemptsMade).toBe(1);
      expect(failed?.failedReason).toContain('550');
      expect(smtp.attempts - attempts).toBe(1);
      expect(mailsTo(from)).toEqual([]);
    } finally {
      smtp.refuse(550, 0);
      await queue.close();
    }
  });

  it('after downtime, answers exactly the mail that came meanwhile', async () => {
    await role!.stop();
    role = undefined;
    const from = address('downtime');
    await dovecot.deliver(trusted(from, 'written during the downtime'));
    const answeredBefore = smtp.mails.length;
    role = await startMagpie();
    await smtp.waitFor(() => mailsTo(from).length === 1, TURN_MS);
    // A marker after the start: once it is answered, anything taken again would have been too.
    const marker = address('downtime-marker');
    await dovecot.deliver(trusted(marker, 'marker after the restart'));
    await smtp.waitFor(() => mailsTo(marker).length === 1, TURN_MS);
    expect(smtp.mails.length - answeredBefore).toBe(2);
  });
});

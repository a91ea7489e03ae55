/**
 * The Channel contract for e-mail: the user is mail delivered into a real
 * IMAP mailbox (Dovecot, test/fakes/dovecot.ts) from an allowed address with
 * the receiving server's DMARC pass, and the chat is what magpie mailed back
 * to that address over SMTP (test/fakes/smtp-server.ts), read as its text
 * part. A chat is a sender and one thread: its first mail is the root, every
 * later one a reply to it. No groups, pairing, typing, edits, buttons or live
 * answers; a mail delivered twice (the same Message-ID) is redelivery.
 */
import { randomUUID } from 'node:crypto';
import { shortHash } from '../../src/messages/short-hash.js';
import { startDovecot } from '../fakes/dovecot.js';
import { dmarcPass, rawMail, startFakeSmtp } from '../fakes/smtp-server.js';
import { describeChannelContract } from './channel-contract.js';
import {
  type ChannelHarness,
  type ChatRef,
  fakeReaders,
  type HarnessFactory,
  textOnlyCapabilities,
} from './harness.js';

const AUTHSERV = 'mx.test';
const DOMAIN = 'example.com';

const email: HarnessFactory = {
  capabilities: { ...textOnlyCapabilities(true), live: false },
  textLimit: undefined,
  async start(stack) {
    const dovecot = await startDovecot();
    const smtp = await startFakeSmtp().catch(async (err: unknown) => {
      await dovecot.stop();
      throw err;
    });
    const run = randomUUID().slice(0, 8);
    const addressOf = (where: ChatRef = {}) => `${where.chat ?? 'main'}-${run}@${DOMAIN}`;
    const rootOf = (where: ChatRef = {}) => `<root-${where.chat ?? 'main'}-${run}@${DOMAIN}>`;
    const sent = new Map<string, number>();
    const close = async () => {
      await smtp.close();
      await dovecot.stop();
    };
    try {
      await stack.startMagpie({
        EMAIL_IMAP_URL: dovecot.url,
        EMAIL_SMTP_URL: smtp.url,
        EMAIL_FROM: 'Magpie <magpie@bot.test>',
        EMAIL_ALLOW_FROM: `*@${DOMAIN}`,
        EMAIL_AUTHSERV_ID: AUTHSERV,
      });
    } catch (err) {
      await close();
      throw err;
    }
    const shown = (where?: ChatRef) =>
      smtp.mails.filter((m) => m.to.includes(addressOf(where))).map((m) => m.text);
    const harness: ChannelHarness = {
      capabilities: email.capabilities,
      textLimit: email.textLimit,
      sessionKey: (where) => `email:${addressOf(where)}/${shortHash(rootOf(where), 16)}`,
      async userSays(text, options = {}) {
        const address = addressOf(options);
        const n = sent.get(address) ?? 0;
        sent.set(address, n + 1);
        const raw = rawMail({
          from: `Owner <${address}>`,
          subject: n === 0 ? `Chat ${options.chat ?? 'main'}` : `Re: Chat ${options.chat ?? 'main'}`,
          messageId: n === 0 ? rootOf(options) : `<m${n}-${randomUUID()}@${DOMAIN}>`,
          references: n === 0 ? [] : [rootOf(options)],
          body: text,
          headers: [dmarcPass(AUTHSERV, DOMAIN)],
        });
        await dovecot.deliver(raw);
        if (options.twice) await dovecot.deliver(raw);
      },
      ...fakeReaders(smtp, { shown, typing: () => 0 }),
      close,
    };
    return harness;
  },
};

describeChannelContract('email', email);

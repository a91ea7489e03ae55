/**
 * The e-mail step of `magpie onboard` (skipped when no preset is given or
 * chosen): a preset (Fastmail, Gmail with an app password, or your own
 * server), the address and its password, who may write, and the authserv-id
 * of the receiving server; the IMAP and SMTP logins are checked before
 * anything is written. Sets EMAIL_IMAP_URL, EMAIL_SMTP_URL, EMAIL_FROM,
 * EMAIL_ALLOW_FROM and EMAIL_AUTHSERV_ID.
 */
import { ConfigError } from '../../errors/index.js';
import { existingValue, missingFlag, progress, type StepContext } from '../../onboard/context.js';
import { emailCheck } from './doctor.js';

interface Preset {
  imap?: string;
  smtp?: string;
  /** The authserv-id the provider writes, when it is one known name. */
  authservId?: string;
  note: string;
}

const PRESETS: Record<string, Preset> = {
  fastmail: {
    imap: 'imap.fastmail.com:993',
    smtp: 'smtp.fastmail.com:465',
    note: 'Fastmail: make an app password (Settings → Privacy & Security → App passwords) with IMAP and SMTP access.',
  },
  gmail: {
    imap: 'imap.gmail.com:993',
    smtp: 'smtp.gmail.com:465',
    authservId: 'mx.google.com',
    note: 'Gmail: turn on 2-step verification, then make an app password (myaccount.google.com/apppasswords).',
  },
  custom: { note: 'Your own server: its IMAP (TLS, port 993) and SMTP (TLS, port 465) host names.' },
};

/** The e-mail step: from `--email-preset` or a question; untouched under `--yes` without the flag. */
export async function emailStep(ctx: StepContext): Promise<void> {
  const name = await choosePreset(ctx);
  if (name === undefined) return;
  const preset = PRESETS[name]!;
  progress(ctx, `  ${preset.note}`);
  const address = await value(ctx, 'email-address', 'the mailbox address magpie reads and sends from');
  const password = await value(ctx, 'email-password', 'its (app) password', true);
  const imap = preset.imap ?? (await value(ctx, 'email-imap-host', 'IMAP host:port', false, 'host:993'));
  const smtp = preset.smtp ?? (await value(ctx, 'email-smtp-host', 'SMTP host:port', false, 'host:465'));
  const user = encodeURIComponent(address);
  const pass = encodeURIComponent(password);
  const imapUrl = `imaps://${user}:${pass}@${imap}/INBOX`;
  const smtpUrl = `smtps://${user}:${pass}@${smtp}`;
  const allowFrom = await value(
    ctx,
    'email-allow-from',
    'addresses or *@domain allowed to write (comma-separated)',
  );
  const authservId =
    existingValue(ctx, 'EMAIL_AUTHSERV_ID') ??
    preset.authservId ??
    (await value(
      ctx,
      'email-authserv-id',
      'the authserv-id your server writes (the first word after "Authentication-Results:" in a mail you received there)',
    ));
  const results = await emailCheck({ imapUrl, smtpUrl, from: address, authservId, requireAuth: 'dmarc' }).run(
    ctx.prompter?.signal ?? new AbortController().signal,
  );
  for (const r of [results].flat()) {
    if (r.status === 'fail') throw new ConfigError(`${r.detail}: ${r.fix ?? ''}`);
    progress(ctx, `✓ ${r.detail}`);
  }
  Object.assign(ctx.updates, {
    EMAIL_IMAP_URL: imapUrl,
    EMAIL_SMTP_URL: smtpUrl,
    EMAIL_FROM: address,
    EMAIL_ALLOW_FROM: allowFrom,
    EMAIL_AUTHSERV_ID: authservId,
  });
}

async function choosePreset(ctx: StepContext): Promise<string | undefined> {
  const names = Object.keys(PRESETS);
  const flag = ctx.flags['email-preset'];
  if (flag !== undefined) {
    const name = flag.trim().toLowerCase();
    if (!PRESETS[name]) throw new ConfigError(`--email-preset must be ${names.join(', ')}`);
    return name;
  }
  const prompter = ctx.prompter;
  if (!prompter) return undefined;
  for (;;) {
    const answer = (
      await prompter.ask(`E-mail: ${names.join(', ')} or none`, { default: 'none' })
    ).toLowerCase();
    if (answer === 'none') return undefined;
    if (PRESETS[answer]) return answer;
    prompter.say(`  answer ${names.join(', ')} or none\n`);
  }
}

/** A flag's value, else the answer to a question (required). */
async function value(
  ctx: StepContext,
  flag: string,
  question: string,
  hidden = false,
  example?: string,
): Promise<string> {
  const given = ctx.flags[flag]?.trim();
  if (given) return given;
  if (!ctx.prompter) throw missingFlag(`--${flag}`, question);
  for (;;) {
    const answer = await ctx.prompter.ask(`${question}${example ? ` (${example})` : ''}`, { hidden });
    if (answer !== '') return answer;
  }
}

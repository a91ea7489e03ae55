/**
 * The e-mail channel as the registry sees it: EMAIL_IMAP_URL and
 * EMAIL_SMTP_URL (on when both are set; their passwords are secrets),
 * EMAIL_FROM, EMAIL_ALLOW_FROM, EMAIL_AUTHSERV_ID and EMAIL_REQUIRE_AUTH; an
 * IMAP and SMTP login for doctor; provider presets for onboard. No live
 * replies (`stream` left out). Light: imapflow, nodemailer and mailparser are
 * loaded by `create` only.
 */
import { choice, list, optionalText, optionalUrl } from '../../config/env-values.js';
import { urlCredentials } from '../../config/url-credentials.js';
import { defineChannel, lazyCheck, type SettingsOf } from '../descriptor.js';

export const emailChannel = defineChannel({
  name: 'email',
  env: {
    EMAIL_IMAP_URL: optionalUrl(),
    EMAIL_SMTP_URL: optionalUrl(),
    EMAIL_FROM: optionalText,
    EMAIL_ALLOW_FROM: list,
    EMAIL_AUTHSERV_ID: optionalText,
    EMAIL_REQUIRE_AUTH: choice(['dmarc', 'dkim', 'off'], 'dmarc'),
  },
  settings: (e) => ({
    imapUrl: e.EMAIL_IMAP_URL,
    smtpUrl: e.EMAIL_SMTP_URL,
    from: e.EMAIL_FROM,
    allowFrom: e.EMAIL_ALLOW_FROM,
    authservId: e.EMAIL_AUTHSERV_ID,
    requireAuth: e.EMAIL_REQUIRE_AUTH,
  }),
  // The URLs are shown with their passwords taken out (onboard scrubs URL credentials); the
  // passwords themselves are the secrets.
  secretVariables: [],
  secrets: (s) => [...urlCredentials(s.imapUrl), ...urlCredentials(s.smtpUrl)],
  enabled: (s) => s.imapUrl !== undefined && s.smtpUrl !== undefined,
  async create(deps) {
    const { EmailChannel } = await import('./channel.js');
    return new EmailChannel(deps, deps.bus.emailStore());
  },
  doctor: (s) => lazyCheck('email', async () => (await import('./doctor.js')).emailCheck(s)),
  onboard: {
    flags: [
      'email-preset',
      'email-address',
      'email-password',
      'email-allow-from',
      'email-imap-host',
      'email-smtp-host',
      'email-authserv-id',
    ],
    summary:
      'an e-mail mailbox (IMAP in, SMTP out; Fastmail, Gmail with an app password, or your own server)',
    help: [
      '--email-preset NAME         fastmail, gmail or custom (your own IMAP/SMTP server)',
      '--email-address ADDRESS     the mailbox magpie reads and sends from',
      '--email-password PASSWORD   its (app) password',
      '--email-allow-from LIST     addresses or *@domain allowed to write to it (comma-separated)',
      '--email-imap-host HOST:PORT, --email-smtp-host HOST:PORT   your own server (preset custom)',
      "--email-authserv-id ID      the authserv-id of your server's Authentication-Results headers",
    ],
    run: async (ctx) => (await import('./onboard.js')).emailStep(ctx),
  },
});

declare module '../../config/channel-slices.js' {
  interface ChannelSettingsMap {
    readonly email: SettingsOf<typeof emailChannel>;
  }
}

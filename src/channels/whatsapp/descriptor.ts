/**
 * The WhatsApp channel (Cloud API) as the registry sees it:
 * WHATSAPP_ACCESS_TOKEN (on when set), WHATSAPP_PHONE_NUMBER_ID,
 * WHATSAPP_APP_SECRET (webhook signatures), WHATSAPP_VERIFY_TOKEN (Meta's
 * subscription handshake), WHATSAPP_ALLOW_FROM (numbers in international
 * form, or `*`) and WHATSAPP_API_ROOT; the webhook route is served on the
 * gateway's listener (MAGPIE_WEBHOOK_PORT). No live replies (WhatsApp cannot
 * edit), so no `stream`. Doctor asks the Graph API about the number with the
 * token; onboard asks for the token, the ids and secrets, and your number.
 * Light: the adapter is loaded by `create` only.
 */
import { optionalText, optionalUrl, phoneList } from '../../config/env-values.js';
import { urlCredentials } from '../../config/url-credentials.js';
import { defineChannel, lazyCheck, type SettingsOf } from '../descriptor.js';

export const whatsappChannel = defineChannel({
  name: 'whatsapp',
  playsAudio: true,
  env: {
    WHATSAPP_ACCESS_TOKEN: optionalText,
    WHATSAPP_PHONE_NUMBER_ID: optionalText,
    WHATSAPP_APP_SECRET: optionalText,
    WHATSAPP_VERIFY_TOKEN: optionalText,
    WHATSAPP_ALLOW_FROM: phoneList,
    WHATSAPP_API_ROOT: optionalUrl(),
  },
  settings: (e) => ({
    accessToken: e.WHATSAPP_ACCESS_TOKEN,
    phoneNumberId: e.WHATSAPP_PHONE_NUMBER_ID,
    appSecret: e.WHATSAPP_APP_SECRET,
    verifyToken: e.WHATSAPP_VERIFY_TOKEN,
    allowFrom: e.WHATSAPP_ALLOW_FROM,
    apiRoot: e.WHATSAPP_API_ROOT,
  }),
  secretVariables: ['WHATSAPP_ACCESS_TOKEN', 'WHATSAPP_APP_SECRET', 'WHATSAPP_VERIFY_TOKEN'],
  secrets: (s) => [s.accessToken, s.appSecret, s.verifyToken, ...urlCredentials(s.apiRoot)],
  enabled: (s) => s.accessToken !== undefined,
  async create(deps) {
    const { WhatsAppChannel } = await import('./channel.js');
    return new WhatsAppChannel(deps, { store: deps.bus.whatsappStore(), webhooks: deps.webhooks });
  },
  doctor: (s, config) =>
    lazyCheck('whatsapp', async () => (await import('./doctor.js')).whatsappCheck(s, config.webhook)),
  onboard: {
    flags: [
      'whatsapp-token',
      'whatsapp-phone-number-id',
      'whatsapp-app-secret',
      'whatsapp-verify-token',
      'whatsapp-allow-from',
      'whatsapp-api-root',
      'webhook-port',
    ],
    summary:
      'WhatsApp through the Cloud API (README "WhatsApp": a Meta app, its number, an HTTPS webhook URL)',
    help: [
      '--whatsapp-token TOKEN      a WhatsApp Cloud API access token (a system user token)',
      "--whatsapp-phone-number-id ID   the business number's id (WhatsApp → API Setup)",
      "--whatsapp-app-secret SECRET    the Meta app's secret (App settings → Basic)",
      '--whatsapp-verify-token TEXT    what you give Meta with the webhook URL (default: a random one)',
      '--whatsapp-allow-from NUMBERS   numbers allowed to write to it, +international form (comma-separated)',
      '--webhook-port PORT         where the gateway serves webhooks (MAGPIE_WEBHOOK_PORT)',
    ],
    run: async (ctx) => (await import('./onboard.js')).whatsappStep(ctx),
  },
});

declare module '../../config/channel-slices.js' {
  interface ChannelSettingsMap {
    readonly whatsapp: SettingsOf<typeof whatsappChannel>;
  }
}

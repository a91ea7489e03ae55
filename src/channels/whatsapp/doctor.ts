/**
 * `magpie doctor`'s WhatsApp check: the access token and phone number id
 * together (GET /<phone number id>, which only a token for that number
 * passes), then whether webhooks can be taken (the app secret, the verify
 * token and MAGPIE_WEBHOOK_PORT set). Skipped without a token. Neither the
 * token nor a secret is ever printed.
 */
import { type Check, type CheckResult, failed, pass, skipped } from '../../ops/doctor.js';
import { WHATSAPP_API_ROOT, WHATSAPP_WEBHOOK_PATH } from './api-root.js';
import { GraphClient, GraphError } from './graph.js';

/** The settings the check reads. */
export interface WhatsAppCheckSettings {
  accessToken: string | undefined;
  phoneNumberId: string | undefined;
  appSecret: string | undefined;
  verifyToken: string | undefined;
  apiRoot: string | undefined;
}

/** The token is accepted for the number, and webhooks can be taken. */
export function whatsappCheck(
  settings: WhatsAppCheckSettings,
  webhook: { port: number | undefined; host: string },
): Check {
  return {
    name: 'whatsapp',
    async run(signal) {
      if (!settings.accessToken) return skipped('WHATSAPP_ACCESS_TOKEN not set (channel off)');
      if (!settings.phoneNumberId)
        return failed(
          'WHATSAPP_PHONE_NUMBER_ID not set',
          'put the Phone number ID (Meta app → WhatsApp → API Setup) in .env',
        );
      const root = settings.apiRoot ?? WHATSAPP_API_ROOT;
      const graph = new GraphClient({
        root,
        token: settings.accessToken,
        phoneNumberId: settings.phoneNumberId,
      });
      const results: CheckResult[] = [];
      try {
        const number = await graph.phoneNumber(signal);
        results.push(pass(`number ${number.number}${number.name ? ` (${number.name})` : ''}`));
      } catch (err) {
        if (!(err instanceof GraphError))
          return failed(`cannot reach ${root}`, 'check the network (or WHATSAPP_API_ROOT in .env, when set)');
        return failed(
          `GET /<phone number id> answered ${err.status}${err.code === undefined ? '' : ` (code ${err.code})`}: the token or the phone number id is not accepted`,
          'put a valid access token (a system user token with whatsapp_business_messaging) in WHATSAPP_ACCESS_TOKEN and the Phone number ID in WHATSAPP_PHONE_NUMBER_ID',
        );
      }
      const missing = [
        settings.appSecret ? undefined : 'WHATSAPP_APP_SECRET',
        settings.verifyToken ? undefined : 'WHATSAPP_VERIFY_TOKEN',
        webhook.port === undefined ? 'MAGPIE_WEBHOOK_PORT' : undefined,
      ].filter((v): v is string => v !== undefined);
      if (missing.length > 0) {
        results.push(
          failed(
            `${missing.join(', ')} not set: no webhook can be taken`,
            'set them in .env (README "WhatsApp": the app secret, a verify token, the port your HTTPS proxy forwards to)',
          ),
        );
      } else {
        results.push(
          pass(
            `webhooks on ${webhook.host}:${webhook.port}${WHATSAPP_WEBHOOK_PATH} (Meta reaches them through your HTTPS proxy or tunnel)`,
          ),
        );
      }
      return results;
    },
  };
}

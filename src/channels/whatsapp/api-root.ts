/** The Graph API root the Cloud API is called on (WHATSAPP_API_ROOT overrides it; tests point it at a fake). */
export const WHATSAPP_API_ROOT = 'https://graph.facebook.com/v21.0';

/** The path of the webhook route on the gateway's webhook listener. */
export const WHATSAPP_WEBHOOK_PATH = '/webhooks/whatsapp';

/** The API root without a trailing slash (paths are appended with one). */
export function trimRoot(root: string): string {
  return root.replace(/\/+$/, '');
}

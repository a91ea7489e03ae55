/** Telegram's public Bot API root. */
export const TELEGRAM_API_ROOT = 'https://api.telegram.org';

/**
 * Named bot accounts: TELEGRAM_ACCOUNTS and DISCORD_ACCOUNTS list
 * `name=token` pairs (commas; a token may hold `:`, so each entry is split on
 * its first `=`). Each account is a channel instance of its own, named
 * `<channel>-<name>` (`telegram-family`): its own queue, sessions, pairing and
 * live replies, beside the default bot (`telegram`, from TELEGRAM_BOT_TOKEN).
 * A problem is one line that never shows a token: only an entry's place, or a
 * name that passed its check.
 */
import { z } from 'zod';
import { ConfigError } from '../errors/index.js';

/** An account's name: lower-case letters and digits (no `-`: it joins the channel's name). */
const NAME = /^[a-z0-9]{1,20}$/;

/** One named bot: its name within the channel and its token. */
export interface BotAccount {
  name: string;
  token: string;
}

/**
 * Reads `name=token` pairs. Returns the accounts, or the first problem as one line.
 *
 * @example parseBotAccounts('family=123:abc,work=456:def') // { accounts: [{ name: 'family', token: '123:abc' }, …] }
 */
export function parseBotAccounts(text: string): { accounts: BotAccount[] } | { problem: string } {
  const accounts: BotAccount[] = [];
  const entries = text.split(',').map((entry) => entry.trim());
  for (const [i, entry] of entries.entries()) {
    const where = `entry ${i + 1}`;
    const eq = entry.indexOf('=');
    if (eq < 0) return { problem: `${where} is not name=token` };
    const name = entry.slice(0, eq).trim();
    const token = entry.slice(eq + 1).trim();
    // The name is not shown when it is wrong: a token written first would be printed.
    if (!NAME.test(name))
      return { problem: `${where}: the name must be 1 to 20 lower-case letters or digits` };
    if (token === '' || /\s/.test(token))
      return { problem: `${where} ("${name}") has no token, or one with spaces` };
    if (accounts.some((a) => a.name === name)) return { problem: `the name "${name}" is given twice` };
    const same = accounts.find((a) => a.token === token);
    if (same) return { problem: `"${name}" has the same token as "${same.name}"` };
    accounts.push({ name, token });
  }
  return { accounts };
}

/** `<CHANNEL>_ACCOUNTS` as a config value: the accounts; unset or blank is none. */
export const botAccountsValue = z
  .string()
  .optional()
  .transform((raw, ctx): BotAccount[] => {
    const value = raw?.trim() ?? '';
    if (value === '') return [];
    const parsed = parseBotAccounts(value);
    if ('problem' in parsed) {
      ctx.addIssue({ code: 'custom', message: `${parsed.problem} (expected name=token,name=token)` });
      return z.NEVER;
    }
    return parsed.accounts;
  });

/** One bot a channel runs: its instance name, its token, and where that token is set (for messages). */
export interface BotInstance {
  /** `telegram` for the default bot, `telegram-family` for an account. */
  name: string;
  token: string;
  /** `TELEGRAM_BOT_TOKEN`, or `TELEGRAM_ACCOUNTS ("family")`. */
  source: string;
}

/** A channel's bot settings and the variables they come from. */
export interface BotSettings {
  token: string | undefined;
  accounts: readonly BotAccount[];
}

/** The names of a channel's two token variables (`TELEGRAM_BOT_TOKEN`, `TELEGRAM_ACCOUNTS`). */
export interface BotVariables {
  token: string;
  accounts: string;
}

/**
 * Every bot a channel names: the default one first, its token possibly unset
 * (doctor shows it skipped), then each account.
 */
export function namedBots(
  channel: string,
  settings: BotSettings,
  variables: BotVariables,
): Array<Omit<BotInstance, 'token'> & { token: string | undefined }> {
  return [
    { name: channel, token: settings.token, source: variables.token },
    ...settings.accounts.map((a) => ({
      name: `${channel}-${a.name}`,
      token: a.token,
      source: `${variables.accounts} ("${a.name}")`,
    })),
  ];
}

/**
 * The bots a channel runs: the default one (when its token is set) first, then each account.
 *
 * @throws ConfigError when an account's token is also the default bot's (two pollers of one bot).
 * @example botInstances('telegram', settings, { token: 'TELEGRAM_BOT_TOKEN', accounts: 'TELEGRAM_ACCOUNTS' })
 */
export function botInstances(channel: string, settings: BotSettings, variables: BotVariables): BotInstance[] {
  const [main, ...accounts] = namedBots(channel, settings, variables);
  const shared = accounts.find((a) => a.token === settings.token);
  if (shared) {
    throw new ConfigError(
      `${shared.source} has the same token as ${variables.token}: give each bot its own token in .env`,
    );
  }
  return [main!, ...accounts].filter((bot): bot is BotInstance => bot.token !== undefined);
}

/** Config for tests that start a magpie role against the fakes: one place for the settings every such test shares. */
import { randomUUID } from 'node:crypto';
import { expect, inject } from 'vitest';
import { parseConfig } from '../../src/app/config.js';
import type { Config } from '../../src/config/index.js';
import { ConfigError } from '../../src/errors/index.js';

/** Where a role under test finds its workspace, model and Redis. */
export interface RoleConfigOptions {
  workspace: string;
  /** The fake OpenAI server (or any endpoint) the role's model calls go to. */
  openai: { baseURL: string };
  /** The queue prefix; a fresh `test-<uuid>` when left out. */
  prefix?: string;
  /** Defaults to the run's redis-server. */
  redisUrl?: string;
}

/**
 * A parsed Config for `startRole`: the run's Redis under a unique prefix, the
 * fake model `fake-model`, no heartbeat, plus the platform's own variables.
 *
 * @example
 * roleConfig({ workspace, openai }, { TELEGRAM_BOT_TOKEN: fake.token, TELEGRAM_API_ROOT: fake.apiRoot });
 */
export function roleConfig(
  options: RoleConfigOptions,
  platformEnv: Record<string, string | undefined> = {},
): Config {
  return parseConfig({
    REDIS_URL: options.redisUrl ?? inject('redisUrl'),
    MAGPIE_QUEUE_PREFIX: options.prefix ?? `test-${randomUUID()}`,
    MAGPIE_WORKSPACE: options.workspace,
    OPENAI_API_KEY: 'test-key',
    OPENAI_BASE_URL: options.openai.baseURL,
    MAGPIE_MODEL: 'fake-model',
    MAGPIE_HEARTBEAT_INTERVAL: '0',
    ...platformEnv,
  });
}

/** The ConfigError parseConfig throws for `env`; fails the test when it parses or throws something else. */
export function configRefusal(env: Record<string, string | undefined>): ConfigError {
  try {
    parseConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new ConfigError(`expected ${JSON.stringify(env)} to be refused`);
}

/** The Telegram variables of a role talking to a fake Bot API, open to `allowFrom` (e.g. `@owner`). */
export function telegramEnv(
  fake: { token: string; apiRoot: string },
  allowFrom: string,
): Record<string, string> {
  return { TELEGRAM_BOT_TOKEN: fake.token, TELEGRAM_API_ROOT: fake.apiRoot, TELEGRAM_ALLOW_FROM: allowFrom };
}

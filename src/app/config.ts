/**
 * The configuration with the registered channels: config itself imports no
 * channel (src/config/channel-slices.ts), so the registry's descriptors are
 * bound here, above both. What commands and tests load a Config with.
 */
import { CHANNELS } from '../channels/registry.js';
import {
  type Config,
  type ConfigNeeds,
  envSchema,
  type LoadConfigOptions,
  loadConfigWith,
  parseConfigWith,
} from '../config/index.js';

/** The environment schema with every registered channel's variables. */
export const EnvSchema = envSchema(CHANNELS);

/**
 * Validates `env` into a Config (every registered channel's settings under
 * `config.channels`). Throws ConfigError with one line naming the variable and the fix.
 */
export function parseConfig(env: NodeJS.ProcessEnv, needs: ConfigNeeds = {}): Config {
  return parseConfigWith(CHANNELS, env, needs);
}

/**
 * Loads `.env` (variables already set win) and parses the environment with the
 * command's flags on top: the entry point for commands.
 *
 * @example loadConfig({ llm: true, overrides: { workspace: values.workspace } })
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  return loadConfigWith(CHANNELS, options);
}

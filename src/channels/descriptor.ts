/**
 * What magpie knows about one channel, in one object its folder exports: its
 * environment variables (a zod slice of the config schema) and their typed
 * settings, which values are secrets, its live-reply switch, when it runs, how
 * it is built, and its `magpie doctor` check and `magpie onboard` step. The
 * registry (registry.ts) lists the descriptors; config, secrets, the gateway,
 * doctor and onboard loop over it.
 *
 * A descriptor module stays light: the adapter (and its platform SDK), the
 * doctor check and the onboarding step are loaded with `import()` only when
 * used, so `magpie agent` never loads a platform SDK.
 */
import type { z } from 'zod';
import type { Bus } from '../bus/bus.js';
import type { ChannelConfigSlice } from '../config/channel-slices.js';
import type { StepContext } from '../onboard/context.js';
import type { Check } from '../ops/doctor.js';
import type { Channel, ChannelDeps } from './types.js';
import type { WebhookRoutes } from './webhooks.js';

/** What a channel's factory receives: the shared deps, with the whole bus (the CLI channel's reply lists). */
export interface ChannelStartDeps extends ChannelDeps {
  bus: Bus;
  /** The gateway's webhook listener (MAGPIE_WEBHOOK_PORT), where a webhook channel mounts its route. */
  webhooks: WebhookRoutes;
}

/** The parts of the configuration beyond its own settings a channel's `enabled` and `doctor` may read. */
export interface ChannelEnableContext {
  /** MAGPIE_DASHBOARD_PORT: the web chat is served by the dashboard. */
  dashboard: { port: number | undefined };
  /** MAGPIE_WEBHOOK_PORT and MAGPIE_WEBHOOK_HOST: where webhook channels are told about messages. */
  webhook: { port: number | undefined; host: string };
}

/** A channel's part of `magpie onboard`. */
export interface ChannelOnboarding {
  /** Its flags (`telegram-token` → `--telegram-token`), all taking a string. */
  flags: readonly string[];
  /** What the command's help says the step sets up, e.g. "a Discord bot". */
  summary: string;
  /** Its lines under the help's "options:", without the leading indentation. */
  help: readonly string[];
  /** Runs the step (loaded when called): reads `ctx.flags`, asks, checks live, adds to `ctx.updates`. */
  run(ctx: StepContext): Promise<void>;
}

/**
 * One channel, as the registry lists it.
 *
 * @example
 * export const discordChannel = defineChannel({
 *   name: 'discord',
 *   env: { DISCORD_BOT_TOKEN: optionalText, DISCORD_STREAM: optionalSwitch },
 *   settings: (e) => ({ token: e.DISCORD_BOT_TOKEN }),
 *   stream: 'DISCORD_STREAM',
 *   secretVariables: ['DISCORD_BOT_TOKEN'],
 *   secrets: (s) => [s.token],
 *   enabled: (s) => s.token !== undefined,
 *   create: async (deps) => new (await import('./channel.js')).DiscordChannel(deps),
 * });
 */
export interface ChannelDescriptor<
  Name extends string = string,
  Shape extends z.ZodRawShape = z.ZodRawShape,
  Settings = unknown,
> extends ChannelConfigSlice<Name, Shape, Settings> {
  /** Its variables holding secrets (masked by onboard, never printed). */
  readonly secretVariables: readonly (keyof Shape & string)[];
  /** Whether the gateway runs it (e.g. its token is set). */
  enabled(settings: Settings, config: ChannelEnableContext): boolean;
  /**
   * Builds the adapter; loads its module (and SDK) only now. A channel with
   * several bots (named accounts) returns one instance each, every one named
   * `<channel>-<account>` beside the default `<channel>`.
   */
  create(deps: ChannelStartDeps, settings: Settings): Promise<Channel | Channel[]>;
  /** Its `magpie doctor` check (e.g. the platform accepts the token), skipped when it is off; one per bot when it has several. */
  doctor?(settings: Settings, config: ChannelEnableContext): Check | Check[];
  /** Its `magpie onboard` step, when it has one. */
  readonly onboard?: ChannelOnboarding;
  /**
   * Its sender plays a spoken reply (an outbound message's audio `media`, src/voice): the worker
   * speaks answers only to such channels. @defaultValue false
   */
  readonly playsAudio?: boolean;
}

/** Checks a descriptor's types (settings inferred from the mapping) and returns it as is. */
export function defineChannel<Name extends string, Shape extends z.ZodRawShape, Settings>(
  descriptor: ChannelDescriptor<Name, Shape, Settings>,
): ChannelDescriptor<Name, Shape, Settings> {
  return descriptor;
}

/** A doctor check whose module is loaded when it runs (keeps the descriptor light). */
export function lazyCheck(name: string, load: () => Promise<Check>): Check {
  return {
    name,
    async run(signal) {
      return (await load()).run(signal);
    },
  };
}

/** The settings type of a descriptor. */
export type SettingsOf<D extends { settings(...args: never[]): unknown }> = ReturnType<D['settings']>;

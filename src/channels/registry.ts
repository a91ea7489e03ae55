/**
 * Every channel magpie has, one line each: config, secrets, the gateway,
 * doctor and onboard loop over this list (in this order). Adding a channel:
 * its folder with a `descriptor.ts`, one line here, and a contract harness
 * (docs/ARCHITECTURE.md, "Adding a channel").
 */

import type { ChannelSettingsMap } from '../config/channel-slices.js';
import type { Check } from '../ops/doctor.js';
import { apiChannel } from './api/descriptor.js';
import { cliChannel } from './cli/descriptor.js';
import type { ChannelDescriptor, ChannelEnableContext } from './descriptor.js';
import { discordChannel } from './discord/descriptor.js';
import { emailChannel } from './email/descriptor.js';
import { matrixChannel } from './matrix/descriptor.js';
import { signalChannel } from './signal/descriptor.js';
import { slackChannel } from './slack/descriptor.js';
import { telegramChannel } from './telegram/descriptor.js';
import { webChannel } from './web/descriptor.js';
import { whatsappChannel } from './whatsapp/descriptor.js';

/** The channels, in the order of the schema, the gateway's start, doctor's checks and onboard's steps. */
// biome-ignore format: one line per channel, so adding one is a one-line change
export const CHANNELS = [
  cliChannel,
  telegramChannel,
  discordChannel,
  slackChannel,
  webChannel,
  emailChannel,
  whatsappChannel,
  signalChannel,
  matrixChannel,
  apiChannel,
] as const;

/** A registered channel with its settings. */
export interface ConfiguredChannel {
  // biome-ignore lint/suspicious/noExplicitAny: the settings belong to the descriptor beside them
  descriptor: ChannelDescriptor<string, any, any>;
  settings: unknown;
}

/** Every registered channel beside its settings (`config.channels.<name>`), in registry order. */
export function configuredChannels(config: { channels: ChannelSettingsMap }): ConfiguredChannel[] {
  const settings = config.channels as unknown as Readonly<Record<string, unknown>>;
  return CHANNELS.map((descriptor) => ({ descriptor, settings: settings[descriptor.name] }));
}

/**
 * The channels the gateway starts, in registry order: those whose `enabled` says so.
 *
 * @example for (const { descriptor, settings } of enabledChannels(config)) await descriptor.create(deps, settings)
 */
export function enabledChannels(
  config: ChannelEnableContext & { channels: ChannelSettingsMap },
): ConfiguredChannel[] {
  return configuredChannels(config).filter(({ descriptor, settings }) =>
    descriptor.enabled(settings, config),
  );
}

/**
 * Each channel's own `magpie doctor` check, in registry order. Every registered
 * channel is listed (not only the enabled ones): an off channel's check says it is skipped.
 */
export function channelDoctorChecks(
  config: ChannelEnableContext & { channels: ChannelSettingsMap },
): Check[] {
  return configuredChannels(config).flatMap(
    ({ descriptor, settings }) => descriptor.doctor?.(settings, config) ?? [],
  );
}

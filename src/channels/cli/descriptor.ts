/**
 * The CLI channel (`magpie send`/`chat` through the gateway) as the registry
 * sees it: always on, CLI_STREAM its live-reply switch.
 */
import { optionalSwitch } from '../../config/env-values.js';
import { defineChannel, type SettingsOf } from '../descriptor.js';

export const cliChannel = defineChannel({
  name: 'cli',
  playsAudio: true,
  env: { CLI_STREAM: optionalSwitch },
  settings: () => ({}),
  stream: 'CLI_STREAM',
  secretVariables: [],
  secrets: () => [],
  enabled: () => true,
  async create(deps) {
    const { CliChannel } = await import('./cli-channel.js');
    return new CliChannel({ bus: deps.bus, logger: deps.logger });
  },
});

declare module '../../config/channel-slices.js' {
  interface ChannelSettingsMap {
    readonly cli: SettingsOf<typeof cliChannel>;
  }
}

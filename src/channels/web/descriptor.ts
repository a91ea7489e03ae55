/**
 * The web chat as the registry sees it: on when the dashboard that serves its
 * pages is (MAGPIE_DASHBOARD_PORT set), WEB_STREAM its live-reply switch.
 */
import { optionalSwitch } from '../../config/env-values.js';
import { defineChannel, type SettingsOf } from '../descriptor.js';

export const webChannel = defineChannel({
  name: 'web',
  playsAudio: true,
  env: { WEB_STREAM: optionalSwitch },
  settings: () => ({}),
  stream: 'WEB_STREAM',
  secretVariables: [],
  secrets: () => [],
  // The web chat's pages are served by the gateway's dashboard (startDashboardPart in main.ts).
  enabled: (_s, config) => config.dashboard.port !== undefined,
  async create(deps) {
    const { WebChannel } = await import('./web-channel.js');
    return new WebChannel({ bus: deps.bus, logger: deps.logger });
  },
});

declare module '../../config/channel-slices.js' {
  interface ChannelSettingsMap {
    readonly web: SettingsOf<typeof webChannel>;
  }
}

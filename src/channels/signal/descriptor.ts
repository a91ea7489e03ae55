/**
 * The Signal channel as the registry sees it: SIGNAL_RPC_URL (signal-cli's
 * HTTP daemon) and SIGNAL_ACCOUNT (on when both are set) and
 * SIGNAL_ALLOW_FROM (numbers or ACIs, or `*`); `version` and the account for
 * doctor; the daemon, the number and who may write for onboard. No live
 * replies (sender.ts says why), so no stream switch. Light: the adapter and
 * eventsource are loaded by `create` only.
 */
import { list, optionalText, optionalUrl } from '../../config/env-values.js';
import { urlCredentials } from '../../config/url-credentials.js';
import { defineChannel, lazyCheck, type SettingsOf } from '../descriptor.js';

export const signalChannel = defineChannel({
  name: 'signal',
  playsAudio: true,
  env: {
    SIGNAL_RPC_URL: optionalUrl(),
    SIGNAL_ACCOUNT: optionalText,
    SIGNAL_ALLOW_FROM: list,
  },
  settings: (e) => ({
    rpcUrl: e.SIGNAL_RPC_URL,
    account: e.SIGNAL_ACCOUNT,
    allowFrom: e.SIGNAL_ALLOW_FROM,
  }),
  secretVariables: [],
  secrets: (s) => urlCredentials(s.rpcUrl),
  enabled: (s) => s.rpcUrl !== undefined && s.account !== undefined,
  async create(deps) {
    const { SignalChannel } = await import('./channel.js');
    return new SignalChannel(deps);
  },
  doctor: (s) => lazyCheck('signal', async () => (await import('./doctor.js')).signalCheck(s)),
  onboard: {
    flags: ['signal-rpc-url', 'signal-account', 'signal-allow-from'],
    summary: 'Signal through a linked signal-cli daemon (README: Signal)',
    help: [
      '--signal-rpc-url URL        signal-cli daemon --http address, e.g. http://127.0.0.1:8080',
      '--signal-account NUMBER     the Signal number signal-cli is linked to (+…)',
      '--signal-allow-from IDS     numbers (+…) or ACIs allowed to talk to it (comma-separated)',
    ],
    run: async (ctx) => (await import('./onboard.js')).signalStep(ctx),
  },
});

declare module '../../config/channel-slices.js' {
  interface ChannelSettingsMap {
    readonly signal: SettingsOf<typeof signalChannel>;
  }
}

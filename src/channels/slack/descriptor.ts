/**
 * The Slack channel as the registry sees it: SLACK_BOT_TOKEN and
 * SLACK_APP_TOKEN (on when both are set; Socket Mode needs the app token),
 * SLACK_API_ROOT, SLACK_ALLOW_FROM and SLACK_STREAM; `auth.test` and
 * `apps.connections.open` for doctor; the tokens and the user id for onboard.
 * Light: @slack/bolt is loaded by `create` only.
 */
import { list, optionalSwitch, optionalText, optionalUrl } from '../../config/env-values.js';
import { urlCredentials } from '../../config/url-credentials.js';
import { defineChannel, lazyCheck, type SettingsOf } from '../descriptor.js';

export const slackChannel = defineChannel({
  name: 'slack',
  playsAudio: true,
  env: {
    SLACK_STREAM: optionalSwitch,
    SLACK_BOT_TOKEN: optionalText,
    SLACK_APP_TOKEN: optionalText,
    SLACK_API_ROOT: optionalUrl(),
    SLACK_ALLOW_FROM: list,
  },
  settings: (e) => ({
    token: e.SLACK_BOT_TOKEN,
    appToken: e.SLACK_APP_TOKEN,
    apiRoot: e.SLACK_API_ROOT,
    allowFrom: e.SLACK_ALLOW_FROM,
  }),
  stream: 'SLACK_STREAM',
  secretVariables: ['SLACK_BOT_TOKEN', 'SLACK_APP_TOKEN'],
  secrets: (s) => [s.token, s.appToken, ...urlCredentials(s.apiRoot)],
  enabled: (s) => s.token !== undefined && s.appToken !== undefined,
  async create(deps) {
    const { SlackChannel } = await import('./channel.js');
    return new SlackChannel(deps);
  },
  doctor: (s) => lazyCheck('slack', async () => (await import('./doctor.js')).slackCheck(s)),
  onboard: {
    flags: ['slack-token', 'slack-app-token', 'slack-allow-from', 'slack-api-root'],
    summary: 'a Slack app in Socket Mode (README: create it from the manifest)',
    help: [
      '--slack-token TOKEN         a Slack bot token (xoxb-…)',
      '--slack-app-token TOKEN     a Slack app-level token with connections:write (xapp-…)',
      '--slack-allow-from IDS      Slack member ids allowed to talk to it (comma-separated)',
    ],
    run: async (ctx) => (await import('./onboard.js')).slackStep(ctx),
  },
});

declare module '../../config/channel-slices.js' {
  interface ChannelSettingsMap {
    readonly slack: SettingsOf<typeof slackChannel>;
  }
}

/**
 * The Matrix channel as the registry sees it: MATRIX_HOMESERVER_URL with
 * MATRIX_ACCESS_TOKEN, or MATRIX_USER_ID and MATRIX_PASSWORD (a login once,
 * its device kept in Redis); MATRIX_ALLOW_FROM and MATRIX_STREAM. `whoami`
 * for doctor. Light: matrix-js-sdk is loaded by `create` only.
 */
import { list, optionalSwitch, optionalText, optionalUrl } from '../../config/env-values.js';
import { urlCredentials } from '../../config/url-credentials.js';
import { defineChannel, lazyCheck, type SettingsOf } from '../descriptor.js';

export const matrixChannel = defineChannel({
  name: 'matrix',
  playsAudio: true,
  env: {
    MATRIX_STREAM: optionalSwitch,
    MATRIX_HOMESERVER_URL: optionalUrl(),
    MATRIX_ACCESS_TOKEN: optionalText,
    MATRIX_USER_ID: optionalText,
    MATRIX_PASSWORD: optionalText,
    MATRIX_ALLOW_FROM: list,
  },
  settings: (e) => ({
    homeserverUrl: e.MATRIX_HOMESERVER_URL,
    accessToken: e.MATRIX_ACCESS_TOKEN,
    userId: e.MATRIX_USER_ID,
    password: e.MATRIX_PASSWORD,
    allowFrom: e.MATRIX_ALLOW_FROM,
  }),
  stream: 'MATRIX_STREAM',
  secretVariables: ['MATRIX_ACCESS_TOKEN', 'MATRIX_PASSWORD'],
  secrets: (s) => [s.accessToken, s.password, ...urlCredentials(s.homeserverUrl)],
  enabled: (s) =>
    s.homeserverUrl !== undefined &&
    (s.accessToken !== undefined || (s.userId !== undefined && s.password !== undefined)),
  async create(deps) {
    const { MatrixChannel } = await import('./channel.js');
    return new MatrixChannel(deps, deps.bus.matrixStore());
  },
  doctor: (s) => lazyCheck('matrix', async () => (await import('./doctor.js')).matrixCheck(s)),
  onboard: {
    flags: ['matrix-homeserver', 'matrix-token', 'matrix-allow-from'],
    summary: 'a Matrix bot account (README: create it, get its access token, invite it)',
    help: [
      "--matrix-homeserver URL     the bot account's homeserver (https://matrix.example.org)",
      "--matrix-token TOKEN        the bot account's access token (or MATRIX_USER_ID + MATRIX_PASSWORD in .env)",
      '--matrix-allow-from IDS     Matrix user ids allowed to talk to it (@you:example.org, comma-separated)',
    ],
    run: async (ctx) => (await import('./onboard.js')).matrixStep(ctx),
  },
});

declare module '../../config/channel-slices.js' {
  interface ChannelSettingsMap {
    readonly matrix: SettingsOf<typeof matrixChannel>;
  }
}

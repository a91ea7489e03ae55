/**
 * `magpie doctor`'s Matrix check: `whoami` with the access token (the one in
 * .env; with a user and password, whether the homeserver answers at all —
 * the kept device is checked when the gateway starts). Skipped when the
 * channel is off; neither token nor URL credentials are printed.
 */
import type { Check } from '../../ops/doctor.js';
import { failed, pass, skipped } from '../../ops/doctor.js';
import { botCheck } from '../../ops/doctor-bots.js';

/** The homeserver accepts the access token. */
export function matrixCheck(settings: {
  homeserverUrl: string | undefined;
  accessToken: string | undefined;
  userId: string | undefined;
  password: string | undefined;
}): Check {
  const root = (settings.homeserverUrl ?? '').replace(/\/+$/, '');
  if (!settings.homeserverUrl)
    return { name: 'matrix', run: async () => skipped('MATRIX_HOMESERVER_URL not set (channel off)') };
  if (!settings.accessToken) {
    return {
      name: 'matrix',
      async run(signal) {
        if (!settings.userId || !settings.password)
          return skipped(
            'neither MATRIX_ACCESS_TOKEN nor MATRIX_USER_ID + MATRIX_PASSWORD set (channel off)',
          );
        const res = await fetch(`${root}/_matrix/client/versions`, { signal }).catch(() => undefined);
        if (!res?.ok) return failed(`cannot reach ${root}`, 'check MATRIX_HOMESERVER_URL and the network');
        return pass(`homeserver answers; ${settings.userId} logs in with its password when magpie starts`);
      },
    };
  }
  return botCheck({
    name: 'matrix',
    token: settings.accessToken,
    tokenVariable: 'MATRIX_ACCESS_TOKEN',
    root,
    rootVariable: 'MATRIX_HOMESERVER_URL',
    request: (r, token) => ({
      url: `${r}/_matrix/client/v3/account/whoami`,
      headers: { authorization: `Bearer ${token}` },
    }),
    botName: (res, body) => {
      const user = (body as { user_id?: unknown }).user_id;
      return res.ok && typeof user === 'string' ? user : undefined;
    },
    refusal: (status) => `whoami answered ${status}: the access token is not accepted`,
    fix: "put the bot account's access token in MATRIX_ACCESS_TOKEN in .env (README: Matrix), or use MATRIX_USER_ID and MATRIX_PASSWORD",
  });
}

/**
 * Connects matrix-js-sdk's client to the homeserver: with MATRIX_ACCESS_TOKEN
 * as it is; with MATRIX_USER_ID and MATRIX_PASSWORD by logging in once and
 * keeping the access token and device id (MatrixStore, in Redis), so a
 * restart reuses the same device instead of piling up new ones. A kept token
 * the server no longer knows is forgotten and the login done again.
 * `whoami` says who the bot is either way.
 */
import { createClient, type ICreateClientOpts, type MatrixClient, MatrixError } from 'matrix-js-sdk';
import { AppError, ConfigError, describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { MatrixStore } from './store.js';

/** What the channel's settings give to log in. */
export interface MatrixLogin {
  homeserverUrl: string;
  accessToken: string | undefined;
  userId: string | undefined;
  password: string | undefined;
}

/** The SDK's logger interface. */
type SdkLogger = NonNullable<ICreateClientOpts['logger']>;

/** A connected client and who it is. */
export interface Connected {
  client: MatrixClient;
  userId: string;
  deviceId: string | undefined;
}

/** Logs in (or reuses the kept device) and checks the token with whoami. Rejects with one clear AppError. */
export async function connect(login: MatrixLogin, store: MatrixStore, logger: Logger): Promise<Connected> {
  const sdkLogger = toSdkLogger(logger);
  const baseUrl = login.homeserverUrl;
  if (login.accessToken) return withToken(baseUrl, login.accessToken, sdkLogger);
  if (!login.userId || !login.password)
    throw new ConfigError('set MATRIX_ACCESS_TOKEN, or MATRIX_USER_ID and MATRIX_PASSWORD, in .env');
  const kept = await store.device(login.userId);
  if (kept) {
    try {
      return await withToken(baseUrl, kept.accessToken, sdkLogger);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      logger.warn('the kept Matrix device was refused (logged out?): logging in again');
      await store.forgetDevice(login.userId);
    }
  }
  const bare = createClient({ baseUrl, logger: sdkLogger });
  let answer: { access_token: string; device_id: string; user_id: string };
  try {
    answer = await bare.loginRequest({
      type: 'm.login.password',
      identifier: { type: 'm.id.user', user: login.userId },
      password: login.password,
      initial_device_display_name: 'magpie',
    });
  } catch (err) {
    throw toStartError(err, 'MATRIX_USER_ID and MATRIX_PASSWORD');
  }
  await store.saveDevice(login.userId, { accessToken: answer.access_token, deviceId: answer.device_id });
  logger.info({ device: answer.device_id }, 'logged in to Matrix: device kept for restarts');
  return withToken(baseUrl, answer.access_token, sdkLogger);
}

async function withToken(baseUrl: string, accessToken: string, logger: SdkLogger): Promise<Connected> {
  let who: { user_id: string; device_id?: string };
  try {
    who = await createClient({ baseUrl, accessToken, logger }).whoami();
  } catch (err) {
    throw toStartError(err, 'MATRIX_ACCESS_TOKEN');
  }
  const client = createClient({
    baseUrl,
    accessToken,
    userId: who.user_id,
    ...(who.device_id ? { deviceId: who.device_id } : {}),
    logger,
    useAuthorizationHeader: true,
  });
  return { client, userId: who.user_id, deviceId: who.device_id };
}

/** A refused token or password is the configuration's fault; anything else may pass. */
export function toStartError(err: unknown, what: string): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof MatrixError && (err.httpStatus === 401 || err.httpStatus === 403)) {
    return new ConfigError(
      `the Matrix homeserver refused ${what} (${err.errcode ?? err.httpStatus}): check them in .env`,
      {
        cause: err,
      },
    );
  }
  return new AppError('INTERNAL', `cannot reach the Matrix homeserver: ${describeError(err)}`, {
    cause: err,
    transient: true,
  });
}

/** The SDK's logger over a pino child: its chatter at debug, its warnings as warnings. */
export function toSdkLogger(logger: Logger): SdkLogger {
  const line = (msg: unknown[]) => msg.map((m) => (typeof m === 'string' ? m : describeError(m))).join(' ');
  const sdk: SdkLogger = {
    trace: (...msg: unknown[]) => logger.trace(line(msg)),
    debug: (...msg: unknown[]) => logger.debug(line(msg)),
    info: (...msg: unknown[]) => logger.debug(line(msg)),
    warn: (...msg: unknown[]) => logger.warn(line(msg)),
    error: (...msg: unknown[]) => logger.error(line(msg)),
    getChild: () => sdk,
  };
  return sdk;
}

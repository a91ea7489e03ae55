/**
 * The API channel as the registry sees it: MAGPIE_API_PORT turns it on (its
 * own listener, on MAGPIE_API_HOST, 127.0.0.1 unless set), MAGPIE_API_KEYS
 * its callers (`key:name` pairs or a file of them; required when the port is
 * set), MAGPIE_API_TIMEOUT a request's time limit, MAGPIE_API_MAX_BODY the
 * body cap, MAGPIE_API_CONCURRENCY the requests one key may have at once.
 * Light: express and the server load in `create` only.
 */

import { apiKeysValue } from '../../config/api-keys.js';
import { byteSize, duration, optionalPositive, optionalText, positiveInt } from '../../config/env-values.js';
import { defineChannel, type SettingsOf } from '../descriptor.js';
import type { ApiSettings } from './settings.js';

export const apiChannel = defineChannel({
  name: 'api',
  env: {
    MAGPIE_API_PORT: optionalPositive(65535),
    MAGPIE_API_HOST: optionalText,
    MAGPIE_API_KEYS: apiKeysValue,
    MAGPIE_API_TIMEOUT: duration('10m'),
    MAGPIE_API_MAX_BODY: byteSize('32MiB'),
    MAGPIE_API_CONCURRENCY: positiveInt(4),
  },
  settings: (e): ApiSettings => ({
    port: e.MAGPIE_API_PORT,
    host: e.MAGPIE_API_HOST ?? '127.0.0.1',
    keys: e.MAGPIE_API_KEYS,
    timeoutMs: e.MAGPIE_API_TIMEOUT,
    maxBodyBytes: e.MAGPIE_API_MAX_BODY,
    maxConcurrent: e.MAGPIE_API_CONCURRENCY,
  }),
  secretVariables: ['MAGPIE_API_KEYS'],
  secrets: (s) => s.keys.map((k) => k.secret),
  enabled: (s) => s.port !== undefined,
  async create(deps, settings) {
    const { ApiChannel } = await import('./channel.js');
    const { loadAgents } = await import('../../agents/spec.js');
    const { config } = deps;
    // GET /v1/models lists the agents; a request's `model` picks one (agents.json).
    const agents = loadAgents({
      file: config.agentsFile,
      workspace: config.workspace,
      stateDir: config.stateDir,
    });
    return new ApiChannel({
      agents: agents.agents.map((a) => a.id),
      bus: deps.bus,
      logger: deps.logger,
      settings,
      maxMediaBytes: deps.config.media.maxBytes,
      allowPrivateImages: deps.config.tools.webAllowPrivate,
    });
  },
});

declare module '../../config/channel-slices.js' {
  interface ChannelSettingsMap {
    readonly api: SettingsOf<typeof apiChannel>;
  }
}

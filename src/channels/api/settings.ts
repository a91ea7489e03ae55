/** The API channel's settings (its descriptor reads them from MAGPIE_API_*). */
import type { ApiKey } from '../../config/api-keys.js';

/** `config.channels.api`. */
export interface ApiSettings {
  /** Unset: the API is off. */
  port: number | undefined;
  host: string;
  keys: ApiKey[];
  timeoutMs: number;
  maxBodyBytes: number;
  maxConcurrent: number;
}

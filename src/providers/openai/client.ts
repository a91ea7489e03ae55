/**
 * The one way magpie builds an `openai` client (chat, embeddings, speech): every option
 * explicit, so the SDK reads no environment variables of its own (config is the only reader),
 * and its logging off.
 */
import OpenAI from 'openai';

export interface ClientOptions {
  baseURL: string;
  /** Empty or absent: an endpoint without a key (a local server). */
  apiKey?: string | undefined;
  /** The SDK's own timer (headers only): a backstop behind magpie's timeouts. */
  timeoutMs: number;
  /** The SDK's retries. @defaultValue 0: retries are magpie's */
  maxRetries?: number;
}

/** An `openai` client for `options.baseURL`. */
export function openaiClient(options: ClientOptions): OpenAI {
  return new OpenAI({
    // The SDK insists on a key: a keyless endpoint gets a placeholder and no Authorization header.
    apiKey: options.apiKey || 'no-key',
    ...(options.apiKey ? {} : { defaultHeaders: { Authorization: null } }),
    baseURL: options.baseURL,
    organization: null,
    project: null,
    adminAPIKey: null,
    webhookSecret: null,
    maxRetries: options.maxRetries ?? 0,
    timeout: options.timeoutMs,
    logLevel: 'off',
  });
}

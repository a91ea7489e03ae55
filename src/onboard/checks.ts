/**
 * The live checks of `magpie onboard`, each turning a failure into one line
 * with an exit code: the model endpoint's list (GET /models) and a one-token
 * chat call and one web search query; and what the channels' own checks share
 * (a bot's identity, `botApiFetch`; each channel's `onboard.ts` asks its platform).
 * A refused key, an unknown model or a bad token is the user's answer to fix
 * (ConfigError, exit 2); a server that cannot be reached or fails is exit 3.
 * Request URLs and error texts of the bot APIs can carry the token, so they
 * are never shown.
 */
import type { Config, SearchBackendName } from '../config/index.js';
import { AppError, CancelledError, ConfigError, ExitCode, hasCode } from '../errors/index.js';
import { OpenAIProvider } from '../providers/openai/provider.js';

/** The endpoint, key and model being checked. */
export interface ModelEndpoint {
  baseURL: string;
  /** The key as it will be written ('none' for a local server). */
  apiKey: string;
  /** Where the key came from, named in messages (e.g. "--api-key" or "the key you typed"). */
  keySource: string;
}

/** How long one request of a check may take. */
export const CHECK_TIMEOUT_MS = 15_000;

/**
 * The model ids the endpoint lists. A refused key or an endpoint that cannot
 * be reached stops onboarding; an endpoint without a working list (some
 * servers have none) gives `undefined` with the reason, and the model is then
 * proved by the one-token call alone.
 */
export async function listModels(
  endpoint: ModelEndpoint,
  signal?: AbortSignal,
): Promise<{ models: string[] } | { models: undefined; reason: string }> {
  try {
    return { models: await provider(endpoint, 'probe').listModels(signal) };
  } catch (err) {
    if (hasCode(err, 'PROVIDER_AUTH')) throw refusedKey(endpoint, err);
    if (hasCode(err, 'PROVIDER_UNREACHABLE', 'CANCELLED')) throw err;
    return { models: undefined, reason: err instanceof AppError ? err.message : String(err) };
  }
}

/** Asks `model` for a one-token completion; any failure stops onboarding with the reason. */
export async function chatOnce(endpoint: ModelEndpoint, model: string, signal?: AbortSignal): Promise<void> {
  try {
    await provider(endpoint, model).chat({
      messages: [{ role: 'user', content: 'Reply with OK.' }],
      maxTokens: 1,
      // One token may all go to reasoning: an answer at all is what this check is after.
      allowEmpty: true,
      ...(signal ? { signal } : {}),
    });
  } catch (err) {
    if (err instanceof CancelledError) throw err;
    if (hasCode(err, 'PROVIDER_AUTH')) throw refusedKey(endpoint, err);
    if (hasCode(err, 'PROVIDER_MODEL_UNAVAILABLE', 'PROVIDER_BAD_REQUEST')) {
      throw new ConfigError(`the model "${model}" cannot be used at ${endpoint.baseURL}: ${messageOf(err)}`, {
        cause: err,
      });
    }
    throw unavailable(
      `the one-token call to "${model}" at ${endpoint.baseURL} failed: ${messageOf(err)}`,
      err,
    );
  }
}

/** The error for a model that the endpoint's list does not hold. */
export function unknownModel(endpoint: ModelEndpoint, model: string, listed: string[]): ConfigError {
  const some = listed.slice(0, 8).join(', ');
  const more = listed.length > 8 ? ` and ${listed.length - 8} more` : '';
  return new ConfigError(
    `unknown model "${model}": ${endpoint.baseURL} lists ${listed.length === 0 ? 'no models' : `${some}${more}`}`,
  );
}

/** A bot account, as its platform describes it. */
export interface BotIdentity {
  id: string;
  username: string;
}

/** A web search backend and what it needs. */
export interface SearchChoice {
  backend: SearchBackendName;
  /** The Brave or Tavily key, or the SearXNG URL. */
  value: string;
  /** API roots of Brave and Tavily. */
  braveApiRoot: string;
  tavilyApiRoot: string;
}

/** One query for "magpie" through the chosen backend, which proves the key (or the instance's JSON API). */
export async function checkSearch(choice: SearchChoice, signal?: AbortSignal): Promise<string> {
  const { searchBackendFor } = await import('../tools/search-backends/index.js');
  const search: Config['search'] = {
    backend: choice.backend,
    brave: { apiKey: choice.backend === 'brave' ? choice.value : undefined, apiRoot: choice.braveApiRoot },
    tavily: { apiKey: choice.backend === 'tavily' ? choice.value : undefined, apiRoot: choice.tavilyApiRoot },
    searxng: { url: choice.backend === 'searxng' ? choice.value : undefined },
  };
  const backend = searchBackendFor(search, { timeoutMs: CHECK_TIMEOUT_MS });
  if (!backend) throw new ConfigError(`web search: ${choice.backend} needs its key or URL`);
  try {
    await backend.search('magpie', 1, signal ?? AbortSignal.timeout(CHECK_TIMEOUT_MS));
    return backend.label;
  } catch (err) {
    const message = `web search: ${messageOf(err)}`;
    if (err instanceof AppError && err.transient) throw unavailable(message, err);
    throw new ConfigError(message, { cause: err });
  }
}

/** An AppError for a service that cannot be reached or failed: exit 3. */
export function unavailable(message: string, cause?: unknown): AppError {
  return new AppError('PROVIDER_UNREACHABLE', message, {
    exitCode: ExitCode.unavailable,
    ...(cause === undefined ? {} : { cause }),
  });
}

function provider(endpoint: ModelEndpoint, model: string): OpenAIProvider {
  return new OpenAIProvider({
    apiKey: endpoint.apiKey,
    baseURL: endpoint.baseURL,
    model,
    timeoutMs: CHECK_TIMEOUT_MS,
    maxRetries: 0,
    promptCache: 'off',
    settings: { url: 'the base URL', key: endpoint.keySource },
  });
}

function refusedKey(endpoint: ModelEndpoint, err: AppError): ConfigError {
  const status = (err as { status?: number }).status;
  return new ConfigError(
    `${endpoint.baseURL} refused the API key${status ? ` (${status})` : ''}: check ${endpoint.keySource}`,
    { cause: err },
  );
}

function messageOf(err: unknown): string {
  return err instanceof Error ? (err.message.split('\n')[0] ?? err.name) : String(err);
}

/** Where a bot API request goes and how long it may take. */
export interface BotApiRequest {
  /** Named in messages: the platform, e.g. "Slack". */
  service: string;
  /** Shown in messages instead of the URL (which may hold the token). */
  apiRoot: string;
  url: string;
  init?: RequestInit;
  /** @defaultValue {@link CHECK_TIMEOUT_MS} */
  timeoutMs?: number;
  /** Ctrl-C: the request stops with a CancelledError. */
  signal?: AbortSignal | undefined;
}

/**
 * Sends a request to a bot API; a network failure or time-out is exit 3
 * naming only the API root and the reason, never the URL or the error text
 * (either may quote the token).
 */
export async function botApiFetch(req: BotApiRequest): Promise<Response> {
  const timeoutMs = req.timeoutMs ?? CHECK_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    return await fetch(req.url, {
      ...req.init,
      signal: req.signal ? AbortSignal.any([req.signal, timeout]) : timeout,
    });
  } catch (err) {
    if (req.signal?.aborted) throw new CancelledError('onboarding cancelled; nothing was written');
    const code = (err as { cause?: { code?: unknown } }).cause?.code;
    const reason = timeout.aborted
      ? `no answer in ${Math.round(timeoutMs / 1000)} s`
      : typeof code === 'string'
        ? code
        : 'connection failed';
    throw unavailable(`cannot reach ${req.service} at ${req.apiRoot} (${reason})`);
  }
}

/**
 * Maps what the openai SDK (and the network under it) throws to our typed
 * errors: ProviderError with a code that says what went wrong and whether a
 * retry can help. Messages are one line and name the setting to check.
 */
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  OpenAIError,
} from 'openai';
import { AppError, CancelledError, describeError, ProviderError } from '../../errors/index.js';
import { redactText } from '../../log/index.js';

/** What the mapper needs to write a useful message. */
export interface ErrorContext {
  /** The endpoint, named in connection messages (without its credentials). */
  baseURL: string;
  /** Redacted from any text the server sent back. */
  apiKey?: string;
  /** The setting that names the endpoint, for "check …". @defaultValue 'OPENAI_BASE_URL' */
  urlSetting?: string;
  /** The setting that holds the key, for "check …". @defaultValue 'OPENAI_API_KEY' */
  keySetting?: string;
}

const CONTEXT_TEXT =
  /context[ _-]?(length|window)|maximum context|context.{0,20}exceed|too many tokens|prompt is too long|reduce the length of the messages/i;
/** Servers that know no such model: OpenAI's model_not_found, Ollama's "model … not found", OpenRouter's "not a valid model ID". */
const UNKNOWN_MODEL_TEXT =
  /\bmodel\b.{0,120}\b(not found|does not exist|not exist)|\b(unknown|invalid|no such) model\b|not a valid model/i;
/** A spent quota or credit (not a rate limit that passes in seconds). */
const QUOTA_TEXT =
  /insufficient[_ ]quota|exceeded your current quota|out of (credits?|quota)|insufficient (credits?|balance|funds)/i;

/** Converts any thrown value from an SDK call to an AppError (ProviderError, or CancelledError for an abort). */
export function toProviderError(err: unknown, context: ErrorContext): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof APIUserAbortError) return new CancelledError();
  if (err instanceof APIConnectionTimeoutError) return timeoutError(context);
  if (err instanceof APIConnectionError) {
    const reason = networkReason(err.cause) ?? 'connection failed';
    return new ProviderError(
      'PROVIDER_UNREACHABLE',
      `cannot reach the model endpoint ${endpoint(context)} (${reason}): check ${urlSetting(context)}`,
      { cause: err, transient: true },
    );
  }
  if (err instanceof APIError) return fromStatus(err, context);
  if (err instanceof SyntaxError || err instanceof OpenAIError) {
    return new ProviderError(
      'PROVIDER_BAD_RESPONSE',
      `the model endpoint sent a response that is not valid OpenAI JSON (${oneLine(describeError(err), context)})`,
      { cause: err },
    );
  }
  // undici raises a TypeError ("terminated") when the socket drops in the middle of a streamed body.
  const reason = networkReason(err);
  if (reason) {
    return new ProviderError(
      'PROVIDER_UNREACHABLE',
      `lost the connection to the model endpoint ${endpoint(context)} (${reason}): check ${urlSetting(context)}`,
      { cause: err, transient: true },
    );
  }
  return new ProviderError(
    'PROVIDER_BAD_RESPONSE',
    `unexpected failure reading the model's answer: ${oneLine(describeError(err), context)}`,
    { cause: err },
  );
}

/** The error for a request that got no answer in time (our own timer or the SDK's). */
export function timeoutError(context: ErrorContext, timeoutMs?: number): ProviderError {
  const within = timeoutMs === undefined ? '' : ` within ${Math.round(timeoutMs / 100) / 10}s`;
  return new ProviderError(
    'PROVIDER_UNREACHABLE',
    `the model endpoint ${endpoint(context)} did not answer${within}: check ${urlSetting(context)} or raise MAGPIE_LLM_TIMEOUT`,
    { transient: true },
  );
}

/** True when the endpoint said the prompt is longer than the model's context window. */
export function isContextLengthError(err: APIError): boolean {
  if (err.code === 'context_length_exceeded') return true;
  // Compatible servers differ (vLLM, llama.cpp, OpenRouter): this one place reads the body text.
  const text = `${err.message} ${bodyMessage(err.error) ?? ''}`;
  return (err.status === undefined || err.status === 400 || err.status === 413) && CONTEXT_TEXT.test(text);
}

function fromStatus(err: APIError, context: ErrorContext): ProviderError {
  const status = err.status;
  const detail = oneLine(bodyMessage(err.error) ?? err.message, context);
  const retryAfterMs = retryAfterOf(err);
  const options = { cause: err, status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
  /** For the answers worth retrying (429, 408, 409, 5xx, a broken stream). */
  const transient = { ...options, transient: true };
  if (isContextLengthError(err)) {
    return new ProviderError(
      'CONTEXT_LENGTH_EXCEEDED',
      `the conversation is longer than the model's context window (${detail})`,
      options,
    );
  }
  const unavailable = modelUnavailable(err, detail);
  if (unavailable) return new ProviderError('PROVIDER_MODEL_UNAVAILABLE', unavailable, options);
  if (status === 401 || status === 403) {
    return new ProviderError(
      'PROVIDER_AUTH',
      `the API key was refused (${status}): check ${context.keySetting ?? 'OPENAI_API_KEY'}`,
      options,
    );
  }
  if (status === 429) {
    const message = `the model endpoint is rate limiting requests (429): ${detail}`;
    return new ProviderError('PROVIDER_RATE_LIMITED', message, transient);
  }
  if (status === 408) {
    const message = `the model endpoint timed out the request (408): ${detail}`;
    return new ProviderError('PROVIDER_UNREACHABLE', message, transient);
  }
  if (status === undefined || status === 409 || status >= 500) {
    const label = status === undefined ? 'mid-stream error' : String(status);
    return new ProviderError('PROVIDER_SERVER', `the model endpoint failed (${label}): ${detail}`, transient);
  }
  return new ProviderError(
    'PROVIDER_BAD_REQUEST',
    `the model endpoint rejected the request (${status}): ${detail}`,
    options,
  );
}

/**
 * Why the endpoint cannot serve this model now, when its answer says so: an
 * unknown model (404, or 400 from servers that answer so), a spent quota (429
 * insufficient_quota) or credit (402). Another model may still answer.
 */
function modelUnavailable(err: APIError, detail: string): string | undefined {
  const { status } = err;
  const text = `${err.message} ${detail}`;
  if (status === 402) return `the account is out of credit (402): ${detail}`;
  if (err.code === 'insufficient_quota' || (status === 429 && QUOTA_TEXT.test(text))) {
    return `the account is out of quota (${status ?? 'error'} insufficient_quota): ${detail}`;
  }
  const unknown = err.code === 'model_not_found' || UNKNOWN_MODEL_TEXT.test(text);
  if (unknown && (status === 400 || status === 404 || status === 422)) {
    return `the endpoint does not serve this model (${status}): ${detail}`;
  }
  return undefined;
}

/** A server's `retry-after-ms` or `retry-after` (seconds or a date) on an SDK error, in ms. */
function retryAfterOf(err: APIError): number | undefined {
  if (!err.headers) return undefined;
  const ms = Number(err.headers.get('retry-after-ms') ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const header = err.headers.get('retry-after');
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** The `message` of an OpenAI-style error body, when there is one. */
function bodyMessage(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const record = body as Record<string, unknown>;
  if (typeof record.message === 'string') return record.message;
  const inner = record.error;
  if (
    typeof inner === 'object' &&
    inner !== null &&
    typeof (inner as Record<string, unknown>).message === 'string'
  ) {
    return (inner as Record<string, string>).message;
  }
  return undefined;
}

/** A short network reason (ECONNREFUSED, ENOTFOUND, terminated ...) found along a cause chain. */
function networkReason(err: unknown): string | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current; depth++) {
    if (typeof current === 'object' && current !== null) {
      const code = (current as { code?: unknown }).code;
      if (typeof code === 'string' && /^E[A-Z_]+$|^UND_ERR/.test(code)) return code;
      const message = (current as { message?: unknown }).message;
      if (typeof message === 'string' && /^(terminated|other side closed|socket hang up)$/i.test(message)) {
        return message;
      }
      current = (current as { cause?: unknown }).cause;
    } else {
      break;
    }
  }
  return undefined;
}

function urlSetting(context: ErrorContext): string {
  return context.urlSetting ?? 'OPENAI_BASE_URL';
}

/** The endpoint as error messages show it: no user info, no secret query values. */
function endpoint(context: ErrorContext): string {
  return redactText(context.baseURL, [context.apiKey]);
}

function oneLine(text: string, context: ErrorContext): string {
  const line = redactText(text, [context.apiKey]).split('\n')[0]?.trim() ?? '';
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

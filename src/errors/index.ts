/**
 * Typed errors that decide behaviour. Callers branch on `code` or `instanceof`,
 * never on message text. `transient` says whether retrying can help.
 */
import { scrubCredentials } from '../log/redact.js';

/** Process exit codes used by every `magpie` command. */
export const ExitCode = {
  ok: 0,
  failure: 1,
  config: 2,
  unavailable: 3,
  cancelled: 130,
} as const;

export type ErrorCode =
  | 'CONFIG_INVALID'
  | 'WORKSPACE_MISSING'
  | 'INVALID_SESSION_KEY'
  | 'PROVIDER_AUTH'
  | 'PROVIDER_UNREACHABLE'
  | 'PROVIDER_RATE_LIMITED'
  | 'PROVIDER_SERVER'
  | 'PROVIDER_BAD_REQUEST'
  | 'PROVIDER_BAD_RESPONSE'
  | 'PROVIDER_EMPTY_RESPONSE'
  | 'PROVIDER_MODEL_UNAVAILABLE'
  | 'MODELS_UNAVAILABLE'
  | 'CONTEXT_LENGTH_EXCEEDED'
  | 'BUDGET_EXCEEDED'
  | 'CANCELLED'
  | 'REDIS_UNAVAILABLE'
  | 'REDIS_NOT_INSTALLED'
  | 'INVALID_MESSAGE'
  | 'DELIVERY_PERMANENT'
  | 'DELIVERY_TRANSIENT'
  | 'TIMEOUT'
  | 'TOOL_FAILED'
  | 'TTS_FAILED'
  | 'NOT_FOUND'
  | 'INTERNAL';

export interface AppErrorOptions {
  cause?: unknown;
  /** Whether a retry may succeed. Defaults to false. */
  transient?: boolean;
  /** Exit code when this error ends a command. Defaults to {@link ExitCode.failure}. */
  exitCode?: number;
  /** How long the other side asked us to wait before trying again (a 429's retry-after), when it said. */
  retryAfterMs?: number;
}

/** The base of every error magpie throws on purpose. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly transient: boolean;
  readonly exitCode: number;
  /** How long the other side asked us to wait before a retry (ms), when it said; see {@link AppErrorOptions.retryAfterMs}. */
  readonly retryAfterMs: number | undefined;

  constructor(code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.transient = options.transient ?? false;
    this.exitCode = options.exitCode ?? ExitCode.failure;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/**
 * Bad or missing configuration: the message names the variable and the fix. Exit code 2.
 * Always one line: a line break inside a quoted bad value is shown escaped (`\n`).
 */
export class ConfigError extends AppError {
  constructor(message: string, options: Omit<AppErrorOptions, 'exitCode'> = {}) {
    super('CONFIG_INVALID', oneLine(message), { ...options, exitCode: ExitCode.config });
  }
}

const LINE_BREAKS: Readonly<Record<string, string>> = {
  '\r': '\\r',
  '\n': '\\n',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

function oneLine(text: string): string {
  return text.replace(/[\r\n\u2028\u2029]/g, (c) => LINE_BREAKS[c] ?? ' ');
}

/**
 * The LLM endpoint failed; `code` says how, `transient` whether to retry.
 * PROVIDER_MODEL_UNAVAILABLE: the endpoint says this model cannot be used now
 * (unknown model, quota or credit used up); another model may still answer.
 */
export class ProviderError extends AppError {
  readonly status: number | undefined;
  constructor(code: ErrorCode, message: string, options: AppErrorOptions & { status?: number } = {}) {
    super(code, message, { exitCode: ExitCode.unavailable, ...options });
    this.status = options.status;
  }
}

/**
 * The model answered nothing: a completion without any choice, or with neither
 * text nor tool calls. Transient (a new attempt usually answers); exit code 1.
 *
 * @example throw emptyResponseError('no text and no tool calls, finish_reason stop')
 */
export function emptyResponseError(detail: string): ProviderError {
  return new ProviderError('PROVIDER_EMPTY_RESPONSE', `the model sent an empty answer (${detail})`, {
    transient: true,
    exitCode: ExitCode.failure,
  });
}

/**
 * A model call was refused before it was made: it would pass a spending limit
 * or the per-minute guard. The message is the line the chat reads. Permanent.
 */
export class BudgetError extends AppError {
  /** The limit that refused it (`daily`, `monthly`, `chat_daily`, `daily_tokens`, `per_minute`). */
  readonly limit: string;
  constructor(limit: string, message: string) {
    super('BUDGET_EXCEEDED', message);
    this.limit = limit;
  }
}

/** The turn was cancelled by the user (/stop, Ctrl-C) or by shutdown. */
export class CancelledError extends AppError {
  constructor(message = 'operation cancelled by user') {
    super('CANCELLED', message, { exitCode: ExitCode.cancelled });
  }
}

/** True when `err` is an AppError with one of the given codes. */
export function hasCode(err: unknown, ...codes: ErrorCode[]): err is AppError {
  return err instanceof AppError && codes.includes(err.code);
}

/**
 * A one-line description of any thrown value, for users and logs, with URL
 * credentials, secret query parameters and token shapes taken out.
 */
export function describeError(err: unknown): string {
  const line = err instanceof Error ? (err.message.split('\n')[0] ?? err.name) : String(err).split('\n')[0]!;
  return scrubCredentials(line);
}

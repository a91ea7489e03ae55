/**
 * How the fallback chain reads a model's failure — move on to the next model,
 * or stop because the request itself is at fault — and the error for a call
 * that no model answered: one line naming each model, its endpoint and what
 * went wrong (for `magpie agent` and the logs), and a short apology for chats.
 */
import { AppError, CancelledError, describeError, ExitCode, ProviderError } from '../errors/index.js';
import type { ModelInfo } from './types.js';

/** What a failed call means for the chain. */
export type FailureVerdict =
  /** The endpoint or model is unavailable: cool it down and try the next model. */
  | 'fall-back'
  /** Too long for this model (a later, smaller model): try the next one, nothing to cool down. */
  | 'too-long'
  /** The user cancelled. */
  | 'cancelled'
  /** The request's own fault (or nothing a model change helps): stop here. */
  | 'stop';

/**
 * The verdict on `err` from the model at `position` of the call's order.
 * Falls back on: unreachable, time-out, 429, 5xx (transient, after the provider's
 * retries), an unknown model or spent quota, a refused key, an unreadable answer,
 * a 404 (wrong endpoint path). A context-length error of the first model is left
 * to the agent's compaction; of a later (smaller) one it moves on.
 */
export function verdictOn(err: unknown, position: number): FailureVerdict {
  if (err instanceof CancelledError) return 'cancelled';
  if (!(err instanceof AppError)) return 'stop';
  switch (err.code) {
    case 'CONTEXT_LENGTH_EXCEEDED':
      return position === 0 ? 'stop' : 'too-long';
    case 'PROVIDER_UNREACHABLE':
    case 'PROVIDER_SERVER':
    case 'PROVIDER_RATE_LIMITED':
    case 'PROVIDER_MODEL_UNAVAILABLE':
    case 'PROVIDER_AUTH':
    case 'PROVIDER_BAD_RESPONSE':
      return 'fall-back';
    case 'PROVIDER_BAD_REQUEST':
      return err instanceof ProviderError && err.status === 404 ? 'fall-back' : 'stop';
    default:
      return 'stop';
  }
}

/** One model's part in a call nobody answered. */
export type ModelFailure =
  | { model: ModelInfo; error: AppError }
  | { model: ModelInfo; cooling: { leftMs: number; reason: string; short: string } };

/**
 * No model answered: every one failed this call or was cooling down after
 * failing before. Exit code 3; transient when waiting may help (something was
 * down rather than refusing for good).
 */
export class ModelsUnavailableError extends ProviderError {
  readonly failures: readonly ModelFailure[];

  constructor(failures: readonly ModelFailure[]) {
    const parts = failures.map((f) => `${f.model.id} at ${f.model.baseURL}: ${longReason(f)}`);
    const what = failures.length === 1 ? 'the model' : `all ${failures.length} models`;
    super('MODELS_UNAVAILABLE', `${what} failed: ${parts.join('; ')}`, {
      transient: failures.some((f) => 'cooling' in f || f.error.transient),
      exitCode: ExitCode.unavailable,
    });
    this.failures = failures;
  }

  /** The short reasons by model, without endpoints: `claude-sonnet-4: server error 503; llama3.1: unreachable`. */
  get summary(): string {
    return this.failures.map((f) => `${f.model.id}: ${shortReason(f)}`).join('; ');
  }
}

/** The reply a chat gets when no model answered (no endpoints, no credentials). */
export function modelsDownApology(err: ModelsUnavailableError): string {
  const none = err.failures.length === 1 ? 'my model is not answering' : 'none of my models is answering';
  return `Sorry, ${none} right now (${err.summary}). Please try again in a few minutes.`;
}

function longReason(f: ModelFailure): string {
  if ('cooling' in f) {
    return `resting ${seconds(f.cooling.leftMs)} more after failing (${cut(f.cooling.reason, 160)})`;
  }
  return cut(describeError(f.error), 200);
}

function shortReason(f: ModelFailure): string {
  if ('cooling' in f) return f.cooling.short || 'resting after failures';
  return shortReasonOf(f.error);
}

/** A few words for chats on why a model failed (`unreachable`, `server error 503`, `out of quota`). */
export function shortReasonOf(error: AppError): string {
  const status = error instanceof ProviderError ? error.status : undefined;
  switch (error.code) {
    case 'PROVIDER_UNREACHABLE':
      return status === 408 ? 'timed out' : 'unreachable';
    case 'PROVIDER_SERVER':
      return `server error${status ? ` ${status}` : ''}`;
    case 'PROVIDER_RATE_LIMITED':
      return 'rate-limited';
    case 'PROVIDER_MODEL_UNAVAILABLE':
      return status === 402 || status === 429 ? 'out of quota' : 'model not available there';
    case 'PROVIDER_AUTH':
      return 'key refused';
    case 'PROVIDER_BAD_RESPONSE':
      return 'unreadable answers';
    case 'CONTEXT_LENGTH_EXCEEDED':
      return 'conversation too long for it';
    default:
      return 'failed';
  }
}

function seconds(ms: number): string {
  const s = Math.max(1, Math.ceil(ms / 1000));
  return s < 120 ? `${s}s` : `${Math.ceil(s / 60)} min`;
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

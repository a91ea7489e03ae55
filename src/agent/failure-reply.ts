/**
 * What happens when a turn fails: one rule for whether another attempt may
 * succeed (the bus then redoes the turn), and the one line a user reads when
 * it will not — plain words about what is wrong and what to do, never a
 * stack trace or an endpoint's raw answer.
 */
import { AppError } from '../errors/index.js';
import { ModelsUnavailableError, modelsDownApology } from '../providers/fallback-failures.js';

/**
 * The reply to a chat whose turn failed for good, decided by the error's code.
 *
 * @example
 * if (!isTransient(err) || lastAttempt) await reply(failureReply(err));
 */
export function failureReply(err: unknown): string {
  // No model answered: a short apology without endpoints (the log names each one's failure).
  if (err instanceof ModelsUnavailableError) return modelsDownApology(err);
  if (!(err instanceof AppError)) return 'Sorry, something went wrong on my side; the log has the details.';
  const status = 'status' in err && typeof err.status === 'number' ? ` (${err.status})` : '';
  switch (err.code) {
    case 'PROVIDER_AUTH':
      return `Sorry, the model endpoint refused my API key${status}; the owner needs to check OPENAI_API_KEY.`;
    case 'PROVIDER_UNREACHABLE':
      return 'Sorry, I cannot reach my model right now; please try again in a few minutes.';
    case 'PROVIDER_RATE_LIMITED':
      return 'Sorry, my model endpoint is rate-limiting me; please try again in a minute.';
    case 'PROVIDER_SERVER':
      return `Sorry, my model endpoint is failing${status}; please try again later.`;
    case 'PROVIDER_BAD_REQUEST':
      return `Sorry, the model endpoint rejected the request${status}: ${err.message}`;
    case 'PROVIDER_MODEL_UNAVAILABLE':
      return `Sorry, my model is not available at the endpoint${status}: ${err.message}`;
    case 'PROVIDER_BAD_RESPONSE':
      return 'Sorry, my model sent an answer I could not read; please try again.';
    case 'PROVIDER_EMPTY_RESPONSE':
      return 'Sorry, my model sent an empty answer several times; please try again or rephrase.';
    case 'BUDGET_EXCEEDED':
      return err.message;
    case 'CONTEXT_LENGTH_EXCEEDED':
      return 'Sorry, this conversation no longer fits my model even after summarising; send /new to start afresh.';
    default:
      return `Sorry, I could not answer: ${err.message}`;
  }
}

/**
 * Whether redoing the turn may succeed: an AppError says so itself; anything
 * else (an unexpected failure) gets another attempt too, and the user hears
 * about it only after the last one.
 */
export function isTransient(err: unknown): boolean {
  return err instanceof AppError ? err.transient : true;
}

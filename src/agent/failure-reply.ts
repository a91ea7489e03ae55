/**
 * The one line a user reads when a turn fails for good (a refused key, a bad
 * request). Transient failures are retried by the caller instead.
 */
import { AppError, describeError } from '../errors/index.js';

/**
 * A reply line for a failed turn, decided by the error's code.
 *
 * @example
 * catch (err) { if (!isTransient(err)) await reply(failureReply(err)); }
 */
export function failureReply(err: unknown): string {
  if (!(err instanceof AppError)) return `Something went wrong on my side (${describeError(err)}).`;
  const status = 'status' in err && typeof err.status === 'number' ? ` (${err.status})` : '';
  switch (err.code) {
    case 'PROVIDER_AUTH':
      return `The model endpoint refused the API key${status}; check OPENAI_API_KEY.`;
    case 'PROVIDER_UNREACHABLE':
      return 'I cannot reach the model endpoint right now; check OPENAI_BASE_URL or try again later.';
    case 'PROVIDER_RATE_LIMITED':
      return 'The model endpoint is rate-limiting me; please try again in a minute.';
    case 'PROVIDER_SERVER':
      return `The model endpoint is failing${status}; please try again later.`;
    case 'PROVIDER_BAD_REQUEST':
      return `The model endpoint rejected the request${status}: ${err.message}`;
    case 'PROVIDER_BAD_RESPONSE':
      return 'The model endpoint sent an answer I could not read; please try again.';
    case 'CONTEXT_LENGTH_EXCEEDED':
      return 'This conversation no longer fits the model even after summarising; send /new to start afresh.';
    default:
      return `Something went wrong on my side (${err.message}).`;
  }
}

/** True when retrying the turn may succeed (the bus retries the job). */
export function isTransient(err: unknown): boolean {
  return err instanceof AppError && err.transient;
}

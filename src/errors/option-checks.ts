/** Checks of a part's numeric options, made when it is built (a bad value is a CONFIG_INVALID AppError). */
import { AppError } from './index.js';

/**
 * `value` when it is a whole number of at least 1; else a CONFIG_INVALID
 * AppError naming the option.
 *
 * @example const concurrency = positiveWholeNumber('consumer concurrency', options.concurrency ?? 1);
 */
export function positiveWholeNumber(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new AppError('CONFIG_INVALID', `${name} must be a positive whole number, not ${value}`);
  }
  return value;
}

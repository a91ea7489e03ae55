/**
 * Finding the caller's key: SHA-256 digests compared in constant time
 * against every key, so neither the answer's timing nor an early exit tells
 * a caller how close it came. The keys themselves are read with the
 * configuration (config/api-keys.ts).
 */
import { timingSafeEqual } from 'node:crypto';
import { type ApiKey, digestOf } from '../../config/api-keys.js';

/**
 * The key `presented` is, or undefined. Every key is compared (digests, in
 * constant time), whatever matched first.
 */
export function findKey(keys: readonly ApiKey[], presented: string): ApiKey | undefined {
  const digest = digestOf(presented);
  let found: ApiKey | undefined;
  for (const key of keys) if (timingSafeEqual(Buffer.from(key.digest, 'hex'), digest) && !found) found = key;
  return found;
}

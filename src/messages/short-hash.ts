/** A short, `:`-free hash of a text: ids derived from session keys (BullMQ refuses `:` in job ids). */
import { createHash } from 'node:crypto';

/** A short, `:`-free hash of `text`: the first `length` hex digits of its SHA-256. */
export function shortHash(text: string, length = 24): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

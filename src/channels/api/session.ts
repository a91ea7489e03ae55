/**
 * The session an API request belongs to: named by its `X-Magpie-Session`
 * header or its `user` field; without either, the key's one session. A name
 * becomes part of the session key (`api:<key>/<name>`), so anything beyond a
 * short plain name (an e-mail address is fine) is replaced by a digest of it:
 * no separator, control character or over-long value reaches the key.
 */
import { createHash } from 'node:crypto';

const PLAIN = /^[A-Za-z0-9._@+-]{1,64}$/;

/** The session's name, or undefined for the key's default session. */
export function sessionNameOf(given: string | undefined): string | undefined {
  const name = given?.trim();
  if (!name) return undefined;
  if (PLAIN.test(name)) return name;
  return `h-${createHash('sha256').update(name).digest('hex').slice(0, 24)}`;
}

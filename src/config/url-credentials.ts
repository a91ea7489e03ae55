/**
 * The credentials a URL carries (password, a token-like user name, secret-looking
 * query values): what the secrets of every configured URL are made of.
 */

const SECRET_PARAM = /key|token|secret|passw(or)?d|pwd|signature|sig|auth|credential/i;

/** A user name alone (no password) this long is taken for a token (`https://TOKEN@host`). */
const TOKEN_USERNAME_CHARS = 16;

/**
 * The credentials carried by a URL: its password (as written and decoded), a user name
 * that stands alone and looks like a token, and the values of secret-looking query
 * parameters. A user name beside a password (`magpie`, `default`) is not a secret: it
 * would blank that word everywhere. Empty for text that is not a URL.
 *
 * @example urlCredentials('redis://magpie:hunter2@10.0.0.5:6379') // ['hunter2']
 */
export function urlCredentials(text: string | undefined): string[] {
  if (!text || !URL.canParse(text)) return [];
  const url = new URL(text);
  const found = [url.password, safeDecode(url.password)];
  if (!url.password && url.username.length >= TOKEN_USERNAME_CHARS) {
    found.push(url.username, safeDecode(url.username));
  }
  for (const [name, value] of url.searchParams) if (SECRET_PARAM.test(name)) found.push(value);
  return [...new Set(found.filter((v) => v !== ''))];
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch (err) {
    if (err instanceof URIError) return text; // not percent-encoded after all: the text is the value
    throw err;
  }
}

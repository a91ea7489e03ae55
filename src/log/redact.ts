/**
 * Takes credentials out of free text before anyone reads it (log lines, error
 * messages, doctor output): the user info of any URL (`redis://:pw@host`),
 * secret-looking query parameters (`?api_key=…`), bearer tokens, the shapes
 * of OpenAI keys and the chat platforms' bot tokens, and any configured
 * secret value in the spellings it may take (raw, URL-encoded, JSON-escaped).
 * Imports nothing of magpie's, so errors/ and log/ can both use it.
 */

/** What a removed credential is replaced with. */
export const REDACTED = '[redacted]';

/** `scheme://user:password@` — up to the last `@` before the host (passwords with a raw `@` included). */
const URL_USERINFO = /([a-z][a-z0-9+.-]*:\/\/)[^\s/?#"'<>\\]*@/gi;

/** `?api_key=…`, `&access_token=…`, `&X-Amz-Signature=…`, `?password=…` and the like. */
const SECRET_QUERY =
  /([?&;][\w.-]*?(?:key|token|secret|passw(?:or)?d|pwd|signature|sig|auth|credential)[\w.-]*=)[^&#\s"'<>\\]+/gi;

/** A bearer token anywhere, and the value of an `Authorization` header or field (`Basic …`, `Bot …`). */
const BEARER = /\b(Bearer)\s+[A-Za-z0-9._~+/=-]{8,}/g;
const AUTHORIZATION = /(authorization["']?\s*[:=]\s*["']?)(?:(?:Basic|Bearer|Bot)\s+)?[^\s"',;}]+/gi;

/**
 * Known token shapes: OpenAI-style `sk-…` keys, `<bot id>:<secret>` bot tokens (also inside `/bot<token>/`),
 * and three dot-separated base64 parts (`M…`/`N…`/`O…`) bot tokens.
 */
const TOKEN_SHAPES = [
  /(?<![\w-])sk-[A-Za-z0-9_-]{16,}/g,
  /(?<!\d)\d{5,12}:[A-Za-z0-9_-]{30,}/g,
  /(?<![\w-])[MNO][\w-]{23,27}\.[\w-]{6}\.[\w-]{27,}/g,
];

/**
 * Removes credentials that can be recognised without knowing them: URL user
 * info, secret-looking query parameters, bearer tokens and known token shapes.
 *
 * @example
 * scrubCredentials('Redis at redis://:hunter2@10.0.0.5:6379 is down')
 * // → 'Redis at redis://[redacted]@10.0.0.5:6379 is down'
 */
export function scrubCredentials(text: string): string {
  let out = text;
  if (out.includes('://')) out = out.replace(URL_USERINFO, `$1${REDACTED}@`);
  if (out.includes('=')) out = out.replace(SECRET_QUERY, `$1${REDACTED}`);
  out = out.replace(BEARER, `$1 ${REDACTED}`).replace(AUTHORIZATION, `$1${REDACTED}`);
  for (const shape of TOKEN_SHAPES) out = out.replace(shape, REDACTED);
  return out;
}

/**
 * Every spelling a secret value may take in text: as is, URL-encoded, URL-decoded
 * and JSON-escaped; longest first. Values shorter than 4 characters are ignored.
 */
export function secretSpellings(secrets: Iterable<string | undefined>): string[] {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (!secret || secret.length < 4) continue;
    forms.add(secret);
    forms.add(encodeURIComponent(secret));
    forms.add(JSON.stringify(secret).slice(1, -1));
    if (secret.includes('%')) {
      try {
        forms.add(decodeURIComponent(secret));
      } catch (err) {
        if (!(err instanceof URIError)) throw err; // a lone % is no encoding: nothing else to add
      }
    }
  }
  return [...forms].filter((f) => f.length >= 4).sort((a, b) => b.length - a.length);
}

/**
 * {@link scrubCredentials} plus every spelling of the given secret values.
 *
 * @example
 * redactText('key=abcd1234 failed', [config.llm.apiKey])
 */
export function redactText(text: string, secrets: Iterable<string | undefined> = []): string {
  return textRedactor(secrets)(text);
}

/** {@link redactText} with the spellings worked out once, for text redacted often (every log line). */
export function textRedactor(secrets: Iterable<string | undefined>): (text: string) => string {
  const spellings = secretSpellings(secrets);
  return (text) => {
    let out = text;
    for (const form of spellings) if (out.includes(form)) out = out.split(form).join(REDACTED);
    return scrubCredentials(out);
  };
}

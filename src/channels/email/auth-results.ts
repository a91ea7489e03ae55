/**
 * Reading `Authentication-Results` (RFC 8601), the header in which the
 * receiving mail server records what it verified (SPF, DKIM, DMARC). The From
 * address proves nothing by itself: a mail is believed to come from its From
 * domain only when the header written by *our* server (its authserv-id equals
 * EMAIL_AUTHSERV_ID) says so. A header the sender wrote carries another id, or
 * sits below ours (servers prepend their headers), and is not believed.
 *
 * The header is attacker text: it is read in one pass over its characters
 * (comments, quoted strings, `;` and `=`), never with a backtracking regex.
 */

/** Characters of one header read at most (real headers are a few hundred). */
const MAX_HEADER_CHARS = 16_384;

/** One `method=result` with its properties (`header.d`, `header.from`, `reason`, …). */
export interface AuthResult {
  method: string;
  result: string;
  props: Record<string, string>;
}

/** One parsed header: who wrote it and what it says. */
export interface AuthResultsHeader {
  authservId: string;
  results: AuthResult[];
}

/** EMAIL_REQUIRE_AUTH: what a mail must have passed. `off` believes the From address (unsafe). */
export type RequiredAuth = 'dmarc' | 'dkim' | 'off';

type Token = { kind: 'word'; text: string } | { kind: '=' } | { kind: ';' };

/** Splits a header value into words, `=` and `;`, dropping (nested) comments; linear in its length. */
function tokenize(value: string): Token[] {
  const text = value.length > MAX_HEADER_CHARS ? value.slice(0, MAX_HEADER_CHARS) : value;
  const tokens: Token[] = [];
  let word = '';
  let depth = 0;
  let quoted = false;
  const flush = () => {
    if (word !== '') tokens.push({ kind: 'word', text: word });
    word = '';
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '\\' && i + 1 < text.length) word += text[++i];
      else if (c === '"') quoted = false;
      else word += c;
      continue;
    }
    if (depth > 0) {
      if (c === '\\') i++;
      else if (c === '(') depth++;
      else if (c === ')') depth--;
      continue;
    }
    if (c === '(') {
      flush();
      depth = 1;
    } else if (c === '"') {
      quoted = true;
    } else if (c === '=' || c === ';') {
      flush();
      tokens.push(c === '=' ? { kind: '=' } : { kind: ';' });
    } else if (c === ' ' || c === '\t' || c === '\r' || c === '\n') {
      flush();
    } else {
      word += c;
    }
  }
  flush();
  return tokens;
}

/**
 * Parses one `Authentication-Results` value (without the field name).
 * Undefined when it names no authserv-id.
 *
 * @example parseAuthResults('mx.example.net; dmarc=pass header.from=example.com')
 * // { authservId: 'mx.example.net', results: [{ method: 'dmarc', result: 'pass', props: { 'header.from': 'example.com' } }] }
 */
export function parseAuthResults(value: string): AuthResultsHeader | undefined {
  const tokens = tokenize(value);
  const first = tokens[0];
  if (first?.kind !== 'word') return undefined;
  const results: AuthResult[] = [];
  let current: AuthResult | undefined;
  // After the authserv-id (and an optional version) everything is `key = value` pairs split by `;`.
  let i = 1;
  while (i < tokens.length && tokens[i]!.kind !== ';') i++;
  for (; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token.kind === ';') {
      current = undefined;
      continue;
    }
    const eq = tokens[i + 1];
    const val = tokens[i + 2];
    if (token.kind !== 'word' || eq?.kind !== '=' || val?.kind !== 'word') continue;
    i += 2;
    const key = token.text.toLowerCase();
    if (current === undefined) {
      // The first pair of a resinfo: `method[/version]=result`.
      current = { method: key.split('/')[0]!, result: val.text.toLowerCase(), props: {} };
      results.push(current);
    } else {
      current.props[key] = val.text;
    }
  }
  return { authservId: first.text.toLowerCase(), results };
}

/** What the check found, for the log. */
export interface AuthVerdict {
  ok: boolean;
  reason: string;
}

/**
 * Whether a mail is proven to come from `fromDomain`: the topmost header of
 * `authservId` (headers in the order they appear, newest first) shows
 * `dmarc=pass` (for `dmarc`), or `dkim=pass` signed by the From domain
 * (`header.d`, or `header.i`'s domain; for `dkim` also a DMARC pass counts).
 * `off` believes the From address.
 */
export function verifySender(
  headerValues: readonly string[],
  options: { authservId: string | undefined; require: RequiredAuth; fromDomain: string },
): AuthVerdict {
  if (options.require === 'off') return { ok: true, reason: 'EMAIL_REQUIRE_AUTH=off' };
  const wanted = options.authservId?.trim().toLowerCase();
  if (!wanted) return { ok: false, reason: 'EMAIL_AUTHSERV_ID is not set' };
  const domain = options.fromDomain.toLowerCase();
  const ours = headerValues.map(parseAuthResults).find((h) => h?.authservId === wanted);
  if (!ours) return { ok: false, reason: `no Authentication-Results from ${wanted}` };
  const dmarc = ours.results.some(
    (r) =>
      r.method === 'dmarc' &&
      r.result === 'pass' &&
      (r.props['header.from'] === undefined || r.props['header.from'].toLowerCase() === domain),
  );
  if (dmarc) return { ok: true, reason: 'dmarc=pass' };
  if (options.require === 'dkim') {
    const dkim = ours.results.some(
      (r) => r.method === 'dkim' && r.result === 'pass' && signedBy(r.props, domain),
    );
    if (dkim) return { ok: true, reason: 'dkim=pass' };
    return { ok: false, reason: `no dmarc=pass or dkim=pass for ${domain}` };
  }
  return { ok: false, reason: `no dmarc=pass for ${domain}` };
}

/** `header.d` is the domain, or `header.i` is an address or domain in it. */
function signedBy(props: Record<string, string>, domain: string): boolean {
  const d = props['header.d']?.toLowerCase();
  if (d === domain) return true;
  const identity = props['header.i']?.toLowerCase();
  if (identity === undefined) return false;
  const at = identity.lastIndexOf('@');
  return (at === -1 ? identity : identity.slice(at + 1)) === domain;
}

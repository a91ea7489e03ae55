/**
 * Turns what someone typed ("what was the plumber's number?") into FTS5
 * queries: its words, minus common English words that would match nearly
 * everything, each quoted (so no word is read as FTS5 syntax: AND, NEAR,
 * column filters, `*`), joined with AND (chunks holding every word), as
 * pairs (chunks holding at least two) and with OR (chunks holding any). Porter stemming applies to the query as to the
 * index, so "moved" finds "move" and "moving".
 */

/** Words a query can do without (they are in most chunks and carry no subject). */
const STOPWORDS = new Set(
  (
    'a about above after again all also am an and any are as at be been before being below between both but by ' +
    'can could did do does doing done down during each else ever few for from further get got had has have having ' +
    'he her here hers herself him himself his how i if in into is it its itself just let me more most my myself no ' +
    'nor not now of off on once only or other our ours ourselves out over own same she should so some such than ' +
    'that the their theirs them themselves then there these they this those through to too under until up us very ' +
    'was we were what when where which while who whom why will with would you your yours yourself yourselves ' +
    'tell said say says remember recall know find search look anything something'
  ).split(' '),
);

/** Distinct words a query uses at most. */
export const MAX_QUERY_TERMS = 24;

/** The words of a text as the index's tokenizer sees them (letters and digits; lower case). */
export function queryTerms(text: string): string[] {
  const words =
    text
      .normalize('NFKC')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? [];
  // A lone letter is mostly the "s" of a possessive; a lone digit can be a real answer ("flat 3").
  const useful = words.filter((w) => w.length > 1 || /\p{N}/u.test(w));
  const content = useful.filter((w) => !STOPWORDS.has(w));
  const chosen = content.length > 0 ? content : useful;
  return [...new Set(chosen)].slice(0, MAX_QUERY_TERMS);
}

/** The FTS5 MATCH expressions of a query: every word, at least two of its words, any word. */
export interface MatchExpressions {
  all: string;
  /** Any two words together; only for 3 to {@link MAX_PAIRED_TERMS} words (with 2, that is `all`). */
  pairs?: string;
  any: string;
  /** How many words the query kept. */
  terms: number;
}

/** Queries with more words than this skip the "two words together" tier (it grows as n²). */
export const MAX_PAIRED_TERMS = 6;

/**
 * The FTS5 MATCH expressions for a query, or undefined when it holds no word.
 *
 * @example toMatchExpressions("When did Marta move to Coimbra?")
 * // { all: '"marta" AND "move" AND "coimbra"',
 * //   pairs: '("marta" AND "move") OR ("marta" AND "coimbra") OR ("move" AND "coimbra")',
 * //   any: '"marta" OR "move" OR "coimbra"', terms: 3 }
 */
export function toMatchExpressions(text: string): MatchExpressions | undefined {
  const terms = queryTerms(text);
  if (terms.length === 0) return undefined;
  const quoted = terms.map((t) => `"${t.replace(/"/g, '""')}"`);
  const out: MatchExpressions = { all: quoted.join(' AND '), any: quoted.join(' OR '), terms: terms.length };
  if (terms.length >= 3 && terms.length <= MAX_PAIRED_TERMS) {
    const pairs: string[] = [];
    quoted.forEach((a, i) => {
      for (const b of quoted.slice(i + 1)) pairs.push(`(${a} AND ${b})`);
    });
    out.pairs = pairs.join(' OR ');
  }
  return out;
}

/**
 * The stand-in embedding model's "meaning": a small table of concepts, each
 * with the words a note uses for it (`fact`) and the other words a question
 * uses for the same thing (`ask`). Every word of a concept turns into the
 * concept's id; any other word stays itself. A text's vector is those
 * tokens hashed into a fixed number of dimensions and normalised, so "a used
 * Škoda estate" and "what car do I drive?" share the CAR dimension while
 * sharing no word. Deterministic, no model, no network: it tests the
 * plumbing (and gives the recall benchmark its paraphrases), not a model.
 */
import { createHash } from 'node:crypto';

/** One concept: the words notes use and the words questions use for it. */
export interface Concept {
  id: string;
  /** What a bench fact is about (subject) or adds (detail). */
  kind: 'subject' | 'detail';
  fact: readonly string[];
  ask: readonly string[];
}

const c = (id: string, kind: Concept['kind'], fact: string, ask: string): Concept => ({
  id,
  kind,
  fact: fact.split(' '),
  ask: ask.split(' '),
});

/** The table (words in lower case, diacritics folded). Fact and ask words never overlap. */
export const CONCEPTS: readonly Concept[] = [
  c('CAR', 'subject', 'skoda estate octavia', 'car vehicle drive'),
  c('TEETH', 'subject', 'orthodontist molar', 'dentist teeth dental'),
  c('HOME', 'subject', 'apartment tenancy landlord', 'flat rent live'),
  c('PET', 'subject', 'labrador puppy', 'dog pet'),
  c('JOB', 'subject', 'employer payroll', 'work salary job'),
  c('DOCTOR', 'subject', 'physician consultation', 'gp clinic'),
  c('SPORT', 'subject', 'marathon jogging', 'running race'),
  c('MUSIC', 'subject', 'cello lessons', 'instrument music'),
  c('BOOK', 'subject', 'novel paperback', 'reading book'),
  c('GARDEN', 'subject', 'tomatoes allotment', 'vegetables growing'),
  c('TRAVEL', 'subject', 'flight lisbon', 'trip holiday'),
  c('LOAN', 'subject', 'mortgage lender', 'loan borrowed'),
  c('PHONE', 'subject', 'pixel handset', 'mobile phone'),
  c('BREAD', 'subject', 'sourdough bakery', 'bread loaf'),
  c('MEDICINE', 'subject', 'cholesterol statins', 'medication pills'),
  c('SCHOOL', 'subject', 'kindergarten enrolment', 'nursery preschool'),
  c('BIKE', 'subject', 'bicycle brompton', 'cycle bike'),
  c('WINE', 'subject', 'rioja vintage', 'drink wine'),
  c('COFFEE', 'subject', 'espresso grinder', 'caffeine coffee'),
  c('INSURANCE', 'subject', 'premium policy', 'cover insured'),
  c('MARCH', 'detail', 'march', 'spring'),
  c('NEIGHBOUR', 'detail', 'neighbour tomasz', 'next door'),
  c('BROTHER', 'detail', 'brother luis', 'sibling'),
  c('USED', 'detail', 'secondhand used', 'preowned'),
  c('BROKEN', 'detail', 'cracked shattered', 'damaged broken'),
  c('CHEAP', 'detail', 'bargain discount', 'cheap inexpensive'),
  c('WEEKEND', 'detail', 'saturday sunday', 'weekend'),
  c('BIRTHDAY', 'detail', 'birthday', 'celebration'),
  c('ONLINE', 'detail', 'internet website', 'online web'),
  c('REFUND', 'detail', 'refund reimbursed', 'returned back'),
];

const CONCEPT_OF = new Map<string, string>(
  CONCEPTS.flatMap((concept) => [...concept.fact, ...concept.ask].map((w) => [w, concept.id] as const)),
);

/** Words that carry no meaning for the stand-in. */
const STOPWORDS = new Set(
  'a an the and or of to in on at for with from by about what which who when where how did do does i my me we our is was it that this'.split(
    ' ',
  ),
);

/** The tokens the stand-in embeds: concept ids for table words, the word itself otherwise. */
export function standInTokens(text: string): string[] {
  const words =
    text
      .normalize('NFKD')
      .replace(/\p{M}/gu, '')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.filter((w) => !STOPWORDS.has(w)).map((w) => CONCEPT_OF.get(w) ?? w);
}

/** Dimensions of the stand-in's vectors. */
export const STAND_IN_DIMENSIONS = 256;

/**
 * The stand-in vector of `text`: each token adds ±1 (by its hash) to one
 * dimension (by its hash); a concept token weighs 3, so meaning outweighs
 * incidental words. Normalised; a text without tokens gets a fixed unit vector.
 */
export function standInVector(text: string, dimensions = STAND_IN_DIMENSIONS): number[] {
  const v = new Array<number>(dimensions).fill(0);
  for (const token of standInTokens(text)) {
    const h = createHash('sha256').update(token).digest();
    const weight = /^[A-Z]+$/.test(token) ? 3 : 1;
    v[h.readUInt32BE(0) % dimensions]! += (h[4]! & 1 ? 1 : -1) * weight;
  }
  const norm = Math.hypot(...v);
  if (norm === 0) return v.map((_, i) => (i === 0 ? 1 : 0));
  return v.map((x) => x / norm);
}

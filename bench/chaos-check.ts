/**
 * The verdict of a chaos run (bench/chaos-run.ts): given what each chat had
 * acknowledged, every reply its reply addresses received and the session
 * files, counts what was answered, lost, doubled or out of order. Pure: no
 * Redis, no processes, so it is tested on its own.
 *
 * The fake model answers `chaos <chat> #<n>` with `ack <chat>#<n> …`, naming
 * every message of the turn, so a reply says which messages it answers.
 */

/** The text of message `n` of `chat` as sent. */
export function chaosMessage(chat: string, n: number): string {
  return `chaos ${chat} #${n}`;
}

/** The fake model's answer to the messages in `texts` (the user messages since its last answer). */
export function chaosAnswer(texts: string[]): string {
  const named = texts.flatMap((t) => [...t.matchAll(/chaos (\S+) #(\d+)/g)].map((m) => `${m[1]}#${m[2]}`));
  return named.length > 0 ? `ack ${named.join(' ')}` : 'ack (nothing new)';
}

/** The message numbers a reply names for `chat`. */
export function answeredNumbers(chat: string, content: string): number[] {
  return [...content.matchAll(/(\S+)#(\d+)/g)].filter((m) => m[1] === chat).map((m) => Number(m[2]));
}

/** One reply as a chat's client received it (any of its reply addresses), in order of arrival. */
export interface ReceivedReply {
  chat: string;
  /** The outbound message id (stable across a redone turn). */
  id: string;
  /** The reply address it was pushed to (a turn of several messages answers each one's address). */
  address: string;
  content: string;
  /**
   * Where the gateway's send of this id came among all sends of the run (its
   * first publish on the chat's pub/sub channel, which the CLI channel does
   * before pushing to the reply lists); undefined when the observer was
   * reconnecting then (Redis restarted), and its order is not judged.
   */
  seq: number | undefined;
}

/** What went in: per chat, the numbers whose publish resolved. */
export interface ChaosEvidence {
  acknowledged: Map<string, number[]>;
  /** Every entry of every reply address's list (a message pushed twice is there twice). */
  received: ReceivedReply[];
  /** Per chat, the session file's lines (raw). */
  sessions: Map<string, string[]>;
}

export interface ChaosVerdict {
  /** Messages whose publish resolved. */
  messages: number;
  /** Acknowledged messages some reply named. */
  answered: number;
  /** Acknowledged messages no reply named. */
  lost: number;
  /** Messages named by more than one distinct reply (a second answer). */
  duplicates: number;
  /** Pushes of a reply id to an address that already had it (the client shows it once: at-least-once delivery). */
  sameIdRedeliveries: number;
  /** Replies sent after a reply answering a later message of the chat. */
  deliveredOutOfOrder: number;
  /** Replies whose send the observer missed (their order is not judged). */
  unobservedReplies: number;
  /** Session lines that are not JSON objects. */
  invalidSessionLines: number;
  /** Session user messages out of numeric order or stored twice. */
  sessionOrderErrors: number;
  /** Examples of each problem, for the report. */
  examples: string[];
}

/**
 * What makes a run fail, by the verdict's field: a message lost or answered
 * twice, a reply that reached its chat after a later one, a session line that
 * is not JSON, a session holding a message twice or out of order. Empty: passed.
 */
export function chaosFailures(verdict: ChaosVerdict): string[] {
  const fields = [
    'lost',
    'duplicates',
    'deliveredOutOfOrder',
    'invalidSessionLines',
    'sessionOrderErrors',
  ] as const;
  return fields.filter((field) => verdict[field] > 0).map((field) => `${field}: ${verdict[field]}`);
}

/** Judges a run. */
export function judgeChaos(evidence: ChaosEvidence): ChaosVerdict {
  const verdict: ChaosVerdict = {
    messages: 0,
    answered: 0,
    lost: 0,
    duplicates: 0,
    sameIdRedeliveries: 0,
    deliveredOutOfOrder: 0,
    unobservedReplies: 0,
    invalidSessionLines: 0,
    sessionOrderErrors: 0,
    examples: [],
  };
  const note = (line: string) => {
    if (verdict.examples.length < 20) verdict.examples.push(line);
  };
  for (const [chat, acked] of evidence.acknowledged) {
    const replies = distinctReplies(
      evidence.received.filter((r) => r.chat === chat),
      verdict,
    );
    const answeredBy = new Map<number, string[]>();
    let highest = 0;
    for (const reply of replies) {
      const numbers = answeredNumbers(chat, reply.content);
      for (const n of numbers) answeredBy.set(n, [...(answeredBy.get(n) ?? []), reply.id]);
      if (reply.seq === undefined) {
        verdict.unobservedReplies += 1;
        continue;
      }
      if (numbers.length > 0 && Math.min(...numbers) < highest) {
        verdict.deliveredOutOfOrder += 1;
        note(`${chat}: reply ${reply.id} (${reply.content}) arrived after #${highest}`);
      }
      highest = Math.max(highest, ...numbers);
    }
    verdict.messages += acked.length;
    for (const n of acked) {
      const by = answeredBy.get(n) ?? [];
      if (by.length === 0) {
        verdict.lost += 1;
        note(`${chat}#${n}: acknowledged, never answered`);
      } else verdict.answered += 1;
    }
    for (const [n, by] of answeredBy) {
      if (by.length > 1) {
        verdict.duplicates += 1;
        note(`${chat}#${n}: answered by ${by.length} replies (${by.join(', ')})`);
      }
    }
    checkSession(chat, evidence.sessions.get(chat) ?? [], verdict, note);
  }
  return verdict;
}

/** The chat's replies once each (by id, in send order), counting an address's repeats of one id. */
function distinctReplies(received: ReceivedReply[], verdict: ChaosVerdict): ReceivedReply[] {
  const pushes = new Set<string>();
  const ids = new Set<string>();
  const out: ReceivedReply[] = [];
  const order = (r: ReceivedReply) => r.seq ?? Number.MAX_SAFE_INTEGER;
  for (const r of [...received].sort((a, b) => order(a) - order(b))) {
    const push = `${r.address} ${r.id}`;
    if (pushes.has(push)) verdict.sameIdRedeliveries += 1;
    pushes.add(push);
    if (ids.has(r.id)) continue;
    ids.add(r.id);
    out.push(r);
  }
  return out;
}

/** Every line valid JSON; the user messages' numbers strictly increasing (taken once, in order). */
function checkSession(chat: string, lines: string[], verdict: ChaosVerdict, note: (line: string) => void) {
  let last = 0;
  for (const [i, line] of lines.entries()) {
    if (line.trim() === '') continue;
    let entry: { role?: unknown; content?: unknown };
    try {
      entry = JSON.parse(line);
    } catch {
      verdict.invalidSessionLines += 1;
      note(`${chat}: session line ${i + 1} is not JSON: ${line.slice(0, 80)}`);
      continue;
    }
    if (typeof entry !== 'object' || entry === null) {
      verdict.invalidSessionLines += 1;
      continue;
    }
    if (entry.role !== 'user') continue;
    const text = typeof entry.content === 'string' ? entry.content : JSON.stringify(entry.content);
    for (const m of text.matchAll(/chaos (\S+) #(\d+)/g)) {
      if (m[1] !== chat) continue;
      const n = Number(m[2]);
      if (n <= last) {
        verdict.sessionOrderErrors += 1;
        note(`${chat}: session has #${n} after #${last}`);
      }
      last = Math.max(last, n);
    }
  }
}

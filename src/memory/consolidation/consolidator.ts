/**
 * Memory consolidation: reads what changed since the last run (daily notes,
 * conversations) and asks the model for the whole new MEMORY.md — durable
 * facts added, duplicates merged, contradictions settled in favour of the
 * newer fact, stale entries dropped, under the size cap. The answer must come
 * in a strict frame and pass checks (not empty, under the cap, no wild
 * shrink) before it replaces MEMORY.md atomically and is recorded in the
 * history as `consolidation`. Nothing changed since the last run: no model
 * call at all. One run at a time per workspace (a lock file).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { LLMProvider } from '../../providers/types.js';
import { writeFileAtomic } from '../../workspace/atomic-write.js';
import { HAND_EDIT, type MemoryHistory } from '../history/history.js';
import { lineChanges } from '../history/line-diff.js';
import { FileLock } from '../search/file-lock.js';
import { hasContent } from '../store.js';
import { type ConsolidationMark, changesSince } from './changes.js';
import { checkProposal, parseReply, promptFor } from './prompt.js';

export interface ConsolidatorOptions {
  history: MemoryHistory;
  /** The main provider, budgeted like turns. */
  provider: LLMProvider;
  logger: Logger;
  /** MEMORY.md's size cap in characters (MAGPIE_MEMORY_MAX_CHARS). */
  maxChars: number;
  /** Characters of new material sent at most. @defaultValue 40_000 */
  maxInputChars?: number;
  /** The clock. @defaultValue Date.now */
  now?: () => number;
}

/** How a run ended. */
export type ConsolidationOutcome =
  | { status: 'skipped'; reason: string }
  | { status: 'unchanged' }
  | { status: 'refused'; reason: string }
  | { status: 'applied'; rev: string | undefined; added: number; removed: number; diff: string };

const NO_MARK: ConsolidationMark = { at: 0, seen: new Set() };

/** Runs consolidations of one workspace's memory. */
export class Consolidator {
  private readonly markPath: string;
  private readonly lock: FileLock;
  private readonly now: () => number;

  constructor(private readonly options: ConsolidatorOptions) {
    this.markPath = path.join(options.history.gitDir, 'consolidated.json');
    // Taken at once or not at all: a second run while one is going has nothing to add.
    this.lock = new FileLock({
      path: path.join(options.history.gitDir, 'consolidate.lock'),
      timeoutMs: 50,
      staleMs: 60_000,
    });
    this.now = options.now ?? Date.now;
  }

  /** One consolidation; see {@link ConsolidationOutcome}. Model failures throw (the job retries). */
  async run(): Promise<ConsolidationOutcome> {
    const { history, logger } = this.options;
    await history.init();
    const held = await this.lock.acquire().catch(() => undefined);
    if (!held) return { status: 'skipped', reason: 'another consolidation is running' };
    try {
      return await this.runHeld();
    } catch (err) {
      logger.warn({ err: describeError(err) }, 'memory consolidation failed');
      throw err;
    } finally {
      held.release();
    }
  }

  private async runHeld(): Promise<ConsolidationOutcome> {
    const { history, provider, logger, maxChars } = this.options;
    const started = this.now();
    const since = await this.mark();
    const changes = await changesSince(
      path.dirname(history.gitDir),
      since,
      this.options.maxInputChars ?? 40_000,
      started,
    );
    if (changes.text === '') {
      logger.info(
        { since: since.at ? new Date(since.at).toISOString() : 'never' },
        'memory consolidation skipped: nothing new',
      );
      return { status: 'skipped', reason: 'nothing new since the last consolidation' };
    }
    await history.record(HAND_EDIT);
    const current = await history.store.readLongTerm();
    const response = await provider.chat({
      messages: promptFor(current, changes.text, maxChars, since.at),
      temperature: 0,
    });
    const proposal = parseReply(response.content);
    const refusal =
      proposal === undefined
        ? 'the reply was not in the required format'
        : checkProposal(current, proposal, maxChars);
    if (refusal !== undefined || proposal === undefined || !hasContent(proposal)) {
      const reason = refusal ?? 'the proposed MEMORY.md is empty';
      logger.warn({ reason }, 'memory consolidation refused the model’s answer; MEMORY.md unchanged');
      return { status: 'refused', reason };
    }
    const { added, removed } = lineChanges(current, proposal);
    if (proposal.trim() === current.trim()) {
      await this.setMark(started, changes.seen);
      return { status: 'unchanged' };
    }
    const applied = await history.locked(async () => {
      await history.recordLocked(HAND_EDIT);
      // A change made while the model was thinking would be lost: leave it for the next run.
      if ((await history.store.readLongTerm()) !== current) return undefined;
      await history.store.writeLongTerm(proposal);
      return {
        rev: await history.recordLocked(
          'consolidation',
          `consolidation: ${changes.notes} note(s), ${changes.conversations} conversation(s); +${added.length} -${removed.length} lines`,
        ),
      };
    });
    if (!applied) {
      logger.warn('MEMORY.md changed during consolidation; left for the next run');
      return { status: 'refused', reason: 'MEMORY.md changed while consolidating; the next run takes it up' };
    }
    await this.setMark(started, changes.seen);
    const diff = applied.rev ? await history.diff(applied.rev) : '';
    logger.info(
      { rev: applied.rev, added: added.length, removed: removed.length, diff },
      'memory consolidated',
    );
    return { status: 'applied', rev: applied.rev, added: added.length, removed: removed.length, diff };
  }

  /** When the last run that took the model's answer started (at 0 before the first), and what it saw then. */
  private async mark(): Promise<ConsolidationMark> {
    try {
      const value = JSON.parse(await readFile(this.markPath, 'utf8')) as { at?: unknown; seen?: unknown };
      if (typeof value.at !== 'number' || !Number.isFinite(value.at)) return NO_MARK;
      const seen = Array.isArray(value.seen) ? value.seen.filter((s) => typeof s === 'string') : [];
      return { at: value.at, seen: new Set(seen) };
    } catch {
      return NO_MARK; // no mark yet (or a damaged one): everything counts as new
    }
  }

  private setMark(at: number, seen: string[]): Promise<void> {
    return writeFileAtomic(this.markPath, `${JSON.stringify({ at, seen })}\n`);
  }
}

/** One line saying how a run ended, for the job's result and `magpie memory consolidate`. */
export function describeConsolidation(outcome: ConsolidationOutcome): string {
  switch (outcome.status) {
    case 'skipped':
      return `Consolidation skipped: ${outcome.reason}.`;
    case 'unchanged':
      return 'Consolidation done: MEMORY.md needed no change.';
    case 'refused':
      return `Consolidation refused, MEMORY.md unchanged: ${outcome.reason}.`;
    case 'applied':
      return `Consolidated MEMORY.md${outcome.rev ? ` (${outcome.rev})` : ''}: +${outcome.added} -${outcome.removed} lines.`;
  }
}

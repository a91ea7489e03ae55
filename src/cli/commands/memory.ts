/**
 * `magpie memory search "…"` and `magpie memory reindex`: the assistant's
 * memory search for people — the same index and results as the
 * memory_search tool — and a rebuild of that index from every file.
 */
import { statSync } from 'node:fs';
import { memoryEmbedder } from '../../app/memory-embedder.js';
import { secretValues } from '../../config/secrets.js';
import { AppError, ConfigError, ExitCode } from '../../errors/index.js';
import { formatDay, parseDay } from '../../memory/search/dates.js';
import { formatForPeople, hitJson, type SearchFilters } from '../../memory/search/format.js';
import { type EmbedFigures, type IndexFigures, MemoryIndex } from '../../memory/search/memory-index.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../memory/search/search.js';
import { type CommandIO, type CommandOut, defineCommand } from '../command.js';
import { commandConfig, commandLogger, WORKSPACE_FLAG } from '../startup.js';
import { HISTORY_ACTIONS, HISTORY_HELP, runHistoryAction } from './memory-history.js';

const HELP = `usage: magpie memory search "words" [--limit N] [--since DATE] [--until DATE] [--json]
       magpie memory reindex [--json]
       magpie memory log [--json] | diff [REV] | undo [REV] | consolidate

search   ranked full-text search over memory/MEMORY.md, every daily note and every
         conversation (what the user and the assistant wrote; not tool output), the
         same search the assistant's memory_search tool does. Best matches first, each
         with its file and line, date, and who wrote it. English word forms match
         ("moved" finds "move"). The index is brought up to date first.
reindex  delete the index and build it again from every file (it is otherwise kept
         up to date by itself; a damaged index is rebuilt on its own too).

${HISTORY_HELP}

The index lives in MAGPIE_STATE_DIR (default ~/.local/state/magpie/<workspace>-<hash>),
outside the workspace.

options:
  --limit N          results at most, 1-${MAX_LIMIT} (default ${DEFAULT_LIMIT})
  --since DATE       only notes and messages from this day on (YYYY-MM-DD)
  --until DATE       only notes and messages up to this day (YYYY-MM-DD);
                     with --since or --until, MEMORY.md (undated) is left out
  --json             print JSON
  --workspace DIR    overrides MAGPIE_WORKSPACE
  -h, --help         this help

exit codes: 0 ok (also when nothing matched), 1 failed (or consolidation refused), 2 bad usage,
config or an unknown REV, 3 the index (or the history) is busy in another process for too long`;

/** Where the command writes; tests pass their own. */
export interface MemoryCommandIO extends CommandIO {
  out: CommandOut & { isTTY?: boolean };
}

/** The command; tests pass their own output. */
export const runMemory = defineCommand({
  name: 'memory',
  help: HELP,
  flags: {
    limit: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
    json: { type: 'boolean' },
    ...WORKSPACE_FLAG,
  },
  positionals: true,
  async run({ values, positionals }, io: MemoryCommandIO) {
    const [action, ...rest] = positionals;
    if (action !== undefined && HISTORY_ACTIONS.has(action))
      return runHistoryAction(action, rest, values, io.out);
    if (action !== 'search' && action !== 'reindex') {
      throw new ConfigError(
        'magpie memory: say "search <words>", "reindex", "log", "diff", "undo" or "consolidate"; see "magpie memory --help"',
      );
    }
    if (action === 'reindex' && (rest.length > 0 || values.limit || values.since || values.until)) {
      throw new ConfigError('magpie memory reindex: takes no words and no --limit, --since or --until');
    }
    const query = rest.join(' ').trim();
    if (action === 'search' && query === '') {
      throw new ConfigError(
        'magpie memory search: give the words to look for, e.g. magpie memory search "Marta Coimbra"',
      );
    }
    const limit = values.limit === undefined ? DEFAULT_LIMIT : Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
      throw new ConfigError(`magpie memory search: --limit must be a whole number from 1 to ${MAX_LIMIT}`);
    }
    const filters = await usageErrors(() => ({
      ...(values.since ? { since: parseDay(values.since, '--since') } : {}),
      ...(values.until ? { until: parseDay(values.until, '--until') } : {}),
    }));
    const config = commandConfig(values);
    const logger = commandLogger(config, 'quiet');
    // Not held to the budget: that needs the daemon's Redis; a reindex's embedding calls are the owner's own.
    const embedder = memoryEmbedder(config, logger);
    const index = new MemoryIndex({
      workspace: config.workspace,
      stateDir: config.stateDir,
      timezone: config.timezone,
      logger,
      secrets: secretValues(config),
      // A one-shot command: passages are embedded by reindex, not behind a search.
      ...(embedder ? { embedder, embedAfterSearch: false } : {}),
    });
    if (action === 'reindex') {
      const started = performance.now();
      const figures = await index.reindex();
      const embedded = embedder ? await index.embedPending() : undefined;
      const seconds = (performance.now() - started) / 1000;
      io.out.write(
        values.json
          ? `${JSON.stringify({ ...figures, ...(embedded ? { embedding: { model: embedder?.model, ...embedded } } : {}), seconds: round(seconds), index: index.dbPath, bytes: sizeOf(index.dbPath) }, null, 2)}\n`
          : `${describeReindex(figures, seconds, index.dbPath)}\n${embedded ? `${describeEmbedded(embedded, embedder?.model ?? '')}\n` : ''}`,
      );
      return ExitCode.ok;
    }
    const result = await searchOrUsage(index, query, limit, filters);
    if (values.json) {
      io.out.write(
        `${JSON.stringify({ query, ...filtersJson(filters), hits: result.hits.map(hitJson), searched: result.searched, ...(result.keywordOnly ? { keywordOnly: result.keywordOnly } : {}) }, null, 2)}\n`,
      );
    } else {
      const bold = io.out.isTTY ? { open: '\u001b[1m', close: '\u001b[22m' } : undefined;
      io.out.write(`${formatForPeople(query, result, filters, bold)}\n`);
    }
    return ExitCode.ok;
  },
});

/** The command as `magpie memory` runs it (output on stdout). */
export const run = runMemory;

/** A search whose own checks (a query without words, since after until) are usage errors here. */
function searchOrUsage(index: MemoryIndex, query: string, limit: number, filters: SearchFilters) {
  return usageErrors(() => index.search(query, { limit, ...filters }));
}

/** Runs `make`, turning an AppError TOOL_FAILED (bad input, said for the model) into a usage error. */
async function usageErrors<T>(make: () => T | Promise<T>): Promise<T> {
  try {
    return await make();
  } catch (err) {
    if (err instanceof AppError && err.code === 'TOOL_FAILED') {
      throw new ConfigError(`magpie memory search: ${err.message}`);
    }
    throw err;
  }
}

function filtersJson(filters: SearchFilters): { since?: string; until?: string } {
  return {
    ...(filters.since !== undefined ? { since: formatDay(filters.since) } : {}),
    ...(filters.until !== undefined ? { until: formatDay(filters.until) } : {}),
  };
}

function describeReindex(f: IndexFigures, seconds: number, dbPath: string): string {
  const what = [
    ...(f.longTerm ? ['MEMORY.md'] : []),
    `${f.notes} daily note${f.notes === 1 ? '' : 's'}`,
    `${f.sessions} conversation log${f.sessions === 1 ? '' : 's'}`,
  ];
  const last = what.pop();
  const list = what.length > 0 ? `${what.join(', ')} and ${last}` : last;
  const mb = (sizeOf(dbPath) / 1024 / 1024).toFixed(1);
  const passages = `${f.totalChunks} passage${f.totalChunks === 1 ? '' : 's'}`;
  return `Indexed ${list}: ${passages} in ${seconds.toFixed(1)} s (${dbPath}, ${mb} MB).`;
}

function describeEmbedded(e: EmbedFigures, model: string): string {
  const done = `Embedded ${e.embedded} passage${e.embedded === 1 ? '' : 's'} with ${model}`;
  return e.stopped ? `${done}; ${e.pending} still without a vector: ${e.stopped}.` : `${done}.`;
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    // Only reported, never relied on: an index file missing right after a build shows as 0 bytes.
    return 0;
  }
}

const round = (n: number) => Math.round(n * 1000) / 1000;

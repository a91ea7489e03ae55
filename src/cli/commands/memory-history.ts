/**
 * `magpie memory log | diff [REV] | undo [REV] | consolidate`: MEMORY.md's
 * history for people (src/memory/history/), and a consolidation run now
 * (src/memory/consolidation/), through the worker's budgeted provider.
 */
import { AppError, ConfigError, ExitCode } from '../../errors/index.js';
import type { HistoryEntry } from '../../memory/history/history.js';
import { MemoryHistory } from '../../memory/history/history.js';
import type { CommandOut } from '../command.js';
import { commandConfig, type StartupFlags, withBus } from '../startup.js';

/** The history's subcommands. */
export const HISTORY_ACTIONS: ReadonlySet<string> = new Set(['log', 'diff', 'undo', 'consolidate']);

/** Their part of `magpie memory --help`. */
export const HISTORY_HELP = `log          every recorded change of memory/MEMORY.md, newest first: rev, time,
             who (a tool, consolidation, /forget, undo, hand edit), what, +/- lines
diff [REV]   the change REV made, as a unified diff (default: the last change)
undo [REV]   put MEMORY.md back as it was before REV (default: the last change),
             as a new change "undo REV"; history is never rewritten
consolidate  tidy MEMORY.md now from what changed since the last run (needs Redis
             and the model; MAGPIE_MEMORY_CONSOLIDATE runs it daily)`;

/** Runs one history subcommand; resolves the exit code. */
export async function runHistoryAction(
  action: string,
  rest: readonly string[],
  values: StartupFlags & { json?: boolean },
  out: CommandOut,
): Promise<number> {
  const needsRev = action === 'diff' || action === 'undo';
  if (rest.length > (needsRev ? 1 : 0)) {
    throw new ConfigError(
      needsRev
        ? `magpie memory ${action}: takes at most one REV`
        : `magpie memory ${action}: takes no further words`,
    );
  }
  if (action === 'consolidate') return consolidate(values, out);
  const config = commandConfig(values);
  const history = new MemoryHistory({ workspace: config.workspace });
  try {
    if (action === 'log') {
      // A hand edit not yet noticed (no worker running) is recorded first, so the log is complete.
      await history.record();
      const entries = await history.log();
      if (values.json) out.write(`${JSON.stringify(entries, null, 2)}\n`);
      else
        out.write(
          entries.length === 0
            ? 'No changes of memory/MEMORY.md recorded yet.\n'
            : formatLog(entries, config.timezone),
        );
      return ExitCode.ok;
    }
    const rev = rest[0] ?? 'HEAD';
    if (action === 'diff') {
      out.write(await history.diff(rev));
      return ExitCode.ok;
    }
    const undone = await history.undo(rev);
    out.write(`Undid ${rev}: MEMORY.md is back as it was before it (recorded as ${undone.rev}).\n`);
    return ExitCode.ok;
  } catch (err) {
    if (err instanceof AppError && err.code === 'NOT_FOUND')
      throw new ConfigError(`magpie memory ${action}: ${err.message}`);
    throw err;
  }
}

/** `rev  2026-11-26 03:30  who  +a -r  summary`, one line per change, times in `timezone`. */
export function formatLog(entries: readonly HistoryEntry[], timezone: string): string {
  const width = Math.max(...entries.map((e) => e.who.length));
  // Swedish dates read as ISO: 2026-11-26 03:30.
  const time = new Intl.DateTimeFormat('sv-SE', {
    timeZone: timezone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  });
  return entries
    .map((e) => {
      const at = time.format(e.at);
      const counts = `+${e.added} -${e.removed}`.padEnd(9);
      return `${e.rev}  ${at}  ${e.who.padEnd(width)}  ${counts} ${e.summary}\n`;
    })
    .join('');
}

async function consolidate(values: StartupFlags, out: CommandOut): Promise<number> {
  return withBus(values, 'quiet', async ({ config, bus, logger }) => {
    const { buildProvider } = await import('../../app/build-provider.js');
    const { Budget } = await import('../../budget/budget.js');
    const { BudgetedProvider } = await import('../../budget/budgeted-provider.js');
    const { Consolidator, describeConsolidation } = await import(
      '../../memory/consolidation/consolidator.js'
    );
    const budget = new Budget({
      config: config.budget,
      store: bus.budgetStore(),
      timezone: config.timezone,
      logger,
    });
    const provider = new BudgetedProvider({ provider: await buildProvider(config, logger), budget, logger });
    const history = new MemoryHistory({ workspace: config.workspace, logger });
    const consolidator = new Consolidator({ history, provider, logger, maxChars: config.memory.maxChars });
    const outcome = await consolidator.run();
    out.write(`${describeConsolidation(outcome)}\n`);
    if (outcome.status === 'applied' && outcome.diff) out.write(outcome.diff);
    return outcome.status === 'refused' ? ExitCode.failure : ExitCode.ok;
  });
}

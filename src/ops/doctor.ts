/**
 * `magpie doctor` as data: a list of checks, each bounded in time, each
 * giving ✓ or ✗ with the exact fix, or ! for a warning (printed with its fix,
 * the exit code unchanged). Details pass through redactText, so
 * no token, key or URL credential is ever printed (a bot API's URL may carry the token).
 */
import { describeError } from '../errors/index.js';
import { textRedactor } from '../log/index.js';

/**
 * The outcome of one check. `warn`: works, but not as the operator likely
 * means (printed with its fix; does not fail the run). `skip`: not
 * configured, nothing to check (does not fail the run).
 */
export interface CheckResult {
  status: 'ok' | 'warn' | 'fail' | 'skip';
  /** What was found, e.g. "redis 7.2.4 at redis://127.0.0.1:6379". */
  detail: string;
  /** The exact fix, for a failed or warned check. */
  fix?: string;
}

/** One check: a name and how to run it (aborted when its time is up). */
export interface Check {
  name: string;
  /** This check's own time limit (MCP servers take a while to start). @defaultValue the run's `timeoutMs` */
  timeoutMs?: number;
  run(signal: AbortSignal): Promise<CheckResult | CheckResult[]>;
}

/** A finished check, as printed. */
export interface CheckLine extends CheckResult {
  name: string;
}

export interface RunChecksOptions {
  /** Longest time one check may take. @defaultValue 3000 */
  timeoutMs?: number;
  /** Values never to print (API keys, bot tokens, Redis passwords). */
  secrets?: Iterable<string | undefined>;
}

/** Passed / warned / failed / skipped helpers for checks. */
export const pass = (detail: string): CheckResult => ({ status: 'ok', detail });
export const warned = (detail: string, fix: string): CheckResult => ({ status: 'warn', detail, fix });
export const failed = (detail: string, fix: string): CheckResult => ({ status: 'fail', detail, fix });
export const skipped = (detail: string): CheckResult => ({ status: 'skip', detail });

/** Runs the checks one after another (their order is the reading order), each within the timeout. */
export async function runChecks(checks: Check[], options: RunChecksOptions = {}): Promise<CheckLine[]> {
  const timeoutMs = options.timeoutMs ?? 3_000;
  const redact = textRedactor(options.secrets ?? []);
  const lines: CheckLine[] = [];
  for (const check of checks) {
    const results = await runOne(check, check.timeoutMs ?? timeoutMs);
    for (const r of Array.isArray(results) ? results : [results]) {
      lines.push({
        name: check.name,
        status: r.status,
        detail: redact(r.detail),
        ...(r.fix ? { fix: redact(r.fix) } : {}),
      });
    }
  }
  return lines;
}

async function runOne(check: Check, timeoutMs: number): Promise<CheckResult | CheckResult[]> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<CheckResult>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve(
        failed(
          `no answer within ${timeoutMs / 1000}s`,
          'check that the service is up and reachable from here',
        ),
      );
    }, timeoutMs);
  });
  try {
    return await Promise.race([check.run(controller.signal), timeout]);
  } catch (err) {
    return failed(describeError(err), 'see the error above');
  } finally {
    clearTimeout(timer);
  }
}

const MARKS: Record<CheckResult['status'], string> = { ok: '✓', warn: '!', fail: '✗', skip: '–' };

/**
 * One line per check: `✓ name  detail`, and for ✗ and ! the fix on the next
 * line; then the count of failures (and warnings, which do not fail the run).
 */
export function formatChecks(lines: CheckLine[]): string {
  const width = Math.max(...lines.map((l) => l.name.length));
  const out: string[] = [];
  for (const l of lines) {
    out.push(`${MARKS[l.status]} ${l.name.padEnd(width)}  ${l.detail}`);
    if ((l.status === 'fail' || l.status === 'warn') && l.fix)
      out.push(`  ${' '.repeat(width)}  fix: ${l.fix}`);
  }
  const failures = lines.filter((l) => l.status === 'fail').length;
  const warnings = lines.filter((l) => l.status === 'warn').length;
  const warningText = `${warnings} warning${warnings === 1 ? '' : 's'}`;
  if (failures === 0) out.push(warnings === 0 ? 'All checks passed.' : `All checks passed (${warningText}).`);
  else
    out.push(
      `${failures} check${failures === 1 ? '' : 's'} failed${warnings === 0 ? '' : `, ${warningText}`}.`,
    );
  return `${out.join('\n')}\n`;
}

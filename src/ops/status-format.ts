/** The human form of `magpie status`: short aligned sections, one fact a line. */

import type { UsageFigures, UsageReport } from '../bus/usage-records.js';
import { formatCost } from '../messages/token-counts.js';
import { formatBudgetLines } from './budget-status.js';
import { formatModelLines } from './model-status.js';
import type { StatusReport } from './status.js';

/** Formats a status report for a terminal. */
export function formatStatus(report: StatusReport, now = Date.now()): string {
  const lines: string[] = [];
  lines.push(
    `Redis      ${report.redis.url} (version ${report.redis.version ?? '?'}, prefix ${report.prefix})`,
  );
  const slots = report.workers.reduce((sum, w) => sum + w.concurrency, 0);
  lines.push(`Workers    ${report.workers.length} alive, ${slots} turn slots`);
  for (const w of report.workers) {
    lines.push(
      `  ${w.id}  pid ${w.pid} on ${w.host}, concurrency ${w.concurrency}, up ${ago(w.startedAt, now)}`,
    );
  }
  lines.push('Queues     waiting  active  delayed  failed');
  for (const q of report.queues) {
    lines.push(
      `  ${q.name.padEnd(18)}${pad(q.waiting, 7)}${pad(q.active, 8)}${pad(q.delayed, 9)}${pad(q.failed, 8)}`,
    );
  }
  lines.push(`Running    ${report.running.length} turn${report.running.length === 1 ? '' : 's'}`);
  for (const r of report.running) {
    lines.push(`  ${r.session}  for ${r.seconds}s, LLM iteration ${r.iteration}, on ${r.worker}`);
  }
  if (report.helpers.length > 0) {
    lines.push(`Helpers    ${report.helpers.length} running`);
    for (const h of report.helpers) {
      lines.push(
        `  ${h.id} (${h.kind}) for ${h.origin.sessionKey}, since ${ago(h.startedAt, now)}: ${cut(h.task, 60)}`,
      );
    }
  }
  if (report.approvals.length > 0) {
    lines.push(`Approvals  ${report.approvals.length} waiting for an answer`);
    for (const a of report.approvals) {
      lines.push(`  ${a.code} in ${a.chat} (${a.state}, expires ${a.expiresAt}): ${cut(a.summary, 60)}`);
    }
  }
  const hb = report.schedules.heartbeat;
  lines.push(
    `Heartbeat  ${hb ? `next ${hb.next ?? 'now'}${hb.everyMs ? ` (every ${Math.round(hb.everyMs / 60_000)}m)` : ''}` : 'off'}`,
  );
  lines.push(
    `Scheduled  ${report.schedules.tasks.length} task${report.schedules.tasks.length === 1 ? '' : 's'}`,
  );
  for (const t of report.schedules.tasks) {
    const agent = t.mode === 'agent' ? ' [AGENT: full turn with tools]' : '';
    lines.push(
      `  ${t.id}  ${t.schedule}, next ${t.next ?? 'now'} → ${t.session}${agent}: ${cut(t.message, 50)}`,
    );
  }
  const b = report.backup;
  lines.push(`Backup     ${b ? `last ${b.at}, ${b.bytes} bytes: ${b.file}` : 'none recorded'}`);
  lines.push(`Sessions   ${report.sessions}`);
  lines.push(...usageLines(report.usage));
  if (report.budget) lines.push(...formatBudgetLines(report.budget));
  lines.push(...formatModelLines(report.models));
  lines.push(`Errors     ${report.errors.length === 0 ? 'none recent' : ''}`.trimEnd());
  for (const e of report.errors) lines.push(`  ${e.at}  ${e.source}: ${cut(e.message, 100)}`);
  return `${lines.join('\n')}\n`;
}

/** `Tokens` section: today, since the start, then today's sessions. */
function usageLines(usage: UsageReport): string[] {
  const lines = [
    `Tokens     today (${usage.date}, ${usage.timezone}): ${figures(usage.today)}`,
    `           since the start: ${figures(usage.total)}`,
  ];
  for (const s of usage.sessions) lines.push(`  ${s.session}  today ${figures(s.today)}`);
  return lines;
}

/** `12,345 in (8,000 cached, 65%), 678 out, 4 turns, cost ≈ 0.0123` */
function figures(f: UsageFigures): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const share = f.promptTokens > 0 ? `, ${Math.round((f.cachedTokens / f.promptTokens) * 100)}%` : '';
  const parts = [
    `${n(f.promptTokens)} in (${n(f.cachedTokens)} cached${share})`,
    `${n(f.completionTokens)} out`,
    `${n(f.turns)} turn${f.turns === 1 ? '' : 's'}`,
  ];
  if (f.cost !== undefined) parts.push(`cost ≈ ${formatCost(f.cost)}`);
  return parts.join(', ');
}

function pad(n: number, width: number): string {
  return String(n).padStart(width);
}

function cut(text: string, max: number): string {
  const one = text.replace(/\s+/g, ' ');
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

function ago(iso: string, now: number): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  return `${Math.round(s / 3600)}h`;
}

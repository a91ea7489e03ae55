/**
 * The dashboard's turn timelines (`/turns`): each recent turn as a waterfall
 * of its steps from magpie's own turn records (bus/turn-records.ts), with or
 * without a tracing backend: the wait in the queue (or for an approval), each
 * model call with its tokens, each tool call with its outcome, and when the
 * reply was queued. Plain HTML and CSS bars, every value escaped; no script.
 */
import type { StoredTurn } from '../bus/turn-records.js';
import { type AgentNav, escapeHtml, page } from './dashboard-pages.js';

/** Turns shown (the newest that have a timeline). */
export const TIMELINE_TURNS = 20;

const STYLE = `<style>
.tl{display:grid;grid-template-columns:220px 1fr 90px;gap:2px 10px;align-items:center;font-size:13px}
.tl .lane{position:relative;height:16px;background:#f0f2f6;border-radius:3px}
.tl .bar{position:absolute;top:2px;height:12px;min-width:2px;border-radius:2px}
.tl .bar.queue{background:#c9d3e6}.tl .bar.turn{background:#9aa3b5}.tl .bar.approval{background:#f2c94c}.tl .bar.model{background:#3b82f6}
.tl .bar.tool{background:#1a7f37}.tl .bar.failed{background:#c62828}.tl .bar.mark{background:#1d2330;width:2px}
.tl .ms{text-align:right;font-variant-numeric:tabular-nums;color:#5b6477}.tl .what{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
</style>`;

interface Row {
  label: string;
  cls: string;
  start: number;
  ms: number;
  title: string;
}

/** The page: the newest turns with a timeline, newest first. */
export function turnTimelinePage(turns: readonly StoredTurn[], nav?: AgentNav): string {
  const shown = turns.filter((t) => t.timeline).slice(0, TIMELINE_TURNS);
  const sections = shown.map(turnSection).join('');
  const body = `${STYLE}<main>${
    sections ||
    '<section class="wide"><h2>Turn timelines</h2><p class="muted">no turn with a timeline yet</p></section>'
  }</main>`;
  return page('Turns', body, [], [], nav);
}

function turnSection(turn: StoredTurn): string {
  const rows = rowsOf(turn);
  const t0 = Math.min(...rows.map((r) => r.start), turn.at);
  const span = Math.max(1, turn.at - t0);
  const lanes = rows
    .map((r) => {
      const left = ((r.start - t0) / span) * 100;
      const width = (Math.max(0, r.ms) / span) * 100;
      return `<div class="what" title="${escapeHtml(r.title)}">${escapeHtml(r.label)}</div><div class="lane"><div class="bar ${r.cls}" style="left:${left.toFixed(2)}%;width:${Math.min(width, 100 - left).toFixed(2)}%" data-step="${escapeHtml(r.cls)}"></div></div><div class="ms">${r.cls === 'mark' ? '' : `${Math.round(r.ms)} ms`}</div>`;
    })
    .join('');
  const outcome = escapeHtml(turn.outcome);
  const cls = turn.outcome === 'ok' ? 'ok' : turn.outcome === 'error' ? 'error' : '';
  return `<section class="wide turn" id="turn-${escapeHtml(turn.turn)}"><h2>${escapeHtml(new Date(turn.at).toLocaleString('en-GB'))} · ${escapeHtml(turn.session)} · <span class="${cls}">${outcome}</span> <span class="pill">${(turn.wallMs / 1000).toFixed(2)} s</span></h2><div class="tl">${lanes}</div></section>`;
}

/** The turn's steps in time (ms since the epoch). */
function rowsOf(turn: StoredTurn): Row[] {
  const tl = turn.timeline;
  if (!tl) return [];
  const rows: Row[] = [
    { label: 'received', cls: 'mark', start: tl.receivedAt, ms: 0, title: 'message received' },
  ];
  if (tl.askedAt !== undefined)
    rows.push({
      label: 'approval wait',
      cls: 'approval',
      start: tl.askedAt,
      ms: tl.startedAt - tl.askedAt,
      title: 'from the question to the answer',
    });
  else
    rows.push({
      label: 'queued',
      cls: 'queue',
      start: tl.receivedAt,
      ms: tl.startedAt - tl.receivedAt,
      title: 'from receipt to the worker taking the turn',
    });
  rows.push({
    label: 'turn',
    cls: 'turn',
    start: tl.startedAt,
    ms: turn.at - tl.startedAt,
    title: 'the worker ran the turn (context, model and tool calls)',
  });
  for (const step of tl.steps) {
    const tokens = step.tokens
      ? ` · ${step.tokens.input} in (${step.tokens.cached} cached) / ${step.tokens.output} out`
      : '';
    rows.push({
      label: `${step.kind === 'model' ? 'model' : 'tool'} ${step.name}${step.fallback ? ' (fallback)' : ''}${step.ok ? '' : ' ✗'}`,
      cls: step.ok ? step.kind : 'failed',
      start: tl.startedAt + step.at,
      ms: step.ms,
      title: `${step.kind} ${step.name}${tokens}`,
    });
  }
  rows.push({
    label: 'reply queued',
    cls: 'mark',
    start: turn.at,
    ms: 0,
    title: 'the reply was queued for sending',
  });
  return rows;
}

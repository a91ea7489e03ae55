/**
 * The models part of `magpie status` and the dashboard: which models answered
 * the recent turns (and how many calls a fallback took), and the models or
 * endpoints resting after failures, from the cool-downs the workers share.
 */

import type { StoredTurn } from '../bus/turn-records.js';
import type { CooldownEntry } from '../messages/cooldown.js';
import type { OpsReader } from './ports.js';

/** One model's share of the recent turns. */
export interface ModelUse {
  model: string;
  /** LLM calls it answered. */
  calls: number;
  /** Turns whose last answer it gave. */
  turns: number;
}

export interface ModelsReport {
  /** By calls answered in the recent turns, most first. */
  recent: ModelUse[];
  /** LLM calls of the recent turns answered by a fallback. */
  fallbackCalls: number;
  /** How many recent turns this covers. */
  turns: number;
  /** Models and endpoints resting after failures, longest left first. */
  resting: CooldownEntry[];
}

/** The models report from the recent turns and the shared cool-downs. */
export async function collectModelStatus(
  reader: Pick<OpsReader, 'cooldowns'>,
  turns: readonly StoredTurn[],
): Promise<ModelsReport> {
  const byModel = new Map<string, ModelUse>();
  let fallbackCalls = 0;
  for (const turn of turns) {
    fallbackCalls += turn.fallbacks;
    for (const [model, calls] of Object.entries(turn.models)) {
      const use = byModel.get(model) ?? { model, calls: 0, turns: 0 };
      use.calls += calls;
      if (turn.model === model) use.turns += 1;
      byModel.set(model, use);
    }
  }
  return {
    recent: [...byModel.values()].sort((a, b) => b.calls - a.calls),
    fallbackCalls,
    turns: turns.length,
    resting: await reader.cooldowns(),
  };
}

/** The `Models` lines of `magpie status`. */
export function formatModelLines(report: ModelsReport): string[] {
  const uses = report.recent.map((u) => `${u.model} ${u.calls} call${u.calls === 1 ? '' : 's'}`);
  const lines = [
    `Models     last ${report.turns} turns: ${uses.join(', ') || 'none recorded'}; ${report.fallbackCalls} answered by a fallback`,
  ];
  for (const r of report.resting) {
    const when = r.leftMs > 0 ? `rests ${Math.ceil(r.leftMs / 1000)}s more` : 'being tried again';
    lines.push(
      `  ${r.label}: ${when} after ${r.failures} failure${r.failures === 1 ? '' : 's'} (${r.reason})`,
    );
  }
  return lines;
}

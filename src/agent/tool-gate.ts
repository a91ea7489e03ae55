/**
 * The approval gate in front of a batch of tool calls: each call the policy
 * (approvals/policy.ts) lets through runs; each it asks about is asked at
 * once where the turn can wait for a person (a terminal), else parked, so
 * the turn ends with a question and resumes when it is answered.
 */
import { approvalVerdict, type Verdict } from '../approvals/policy.js';
import { chatKeyOf, type TurnApprovals } from '../approvals/ports.js';
import { NOT_APPROVED } from '../approvals/question.js';
import type { ToolCall } from '../providers/types.js';
import type { LoopTools } from './tool-batch.js';

/** What the gate made of a batch. */
export interface GatedCalls {
  /** Calls to run now. */
  run: ToolCall[];
  /** Calls answered without running (denied at once), by id. */
  answered: Map<string, string>;
  /** Calls waiting for a person, in call order, with the policy's word on each. */
  parked: Array<{ call: ToolCall; verdict: Extract<Verdict, { ask: true }> }>;
}

/** The turn facts the gate judges by. */
export interface GateTurn {
  chat: { channel: string; chatId: string };
  workspace: string;
  taint: string | undefined;
}

/** Parses a call's argument text; anything unreadable is judged as no arguments (the tool will refuse it). */
function parsed(call: ToolCall): unknown {
  try {
    return JSON.parse(call.arguments || '{}');
  } catch {
    return {};
  }
}

/** Judges each call; asks at once where it can. */
export async function gateCalls(
  calls: readonly ToolCall[],
  tools: LoopTools,
  approvals: TurnApprovals | undefined,
  turn: GateTurn,
): Promise<GatedCalls> {
  const out: GatedCalls = { run: [], answered: new Map(), parked: [] };
  if (!approvals || approvals.mode === 'off') return { ...out, run: [...calls] };
  const chatKey = chatKeyOf(turn.chat);
  let rules = await approvals.rules(chatKey);
  for (const call of calls) {
    const verdict = approvalVerdict(call.name, parsed(call), tools.facts?.(call.name), {
      mode: approvals.mode,
      execNetwork: approvals.execNetwork,
      chat: turn.chat,
      taint: turn.taint,
      rules,
      workspace: turn.workspace,
    });
    if (!verdict.ask) {
      out.run.push(call);
      continue;
    }
    if (!approvals.askNow) {
      out.parked.push({ call, verdict });
      continue;
    }
    const answer = await approvals.askNow({
      summary: verdict.summary,
      ...(verdict.rule ? { rule: verdict.rule } : {}),
      ...(turn.taint ? { taint: turn.taint } : {}),
    });
    if (answer === 'deny') {
      out.answered.set(call.id, `Error: ${NOT_APPROVED.denied}`);
      continue;
    }
    if (answer === 'always' && verdict.rule) {
      await approvals.addRule?.(chatKey, verdict.rule);
      rules = [...rules, verdict.rule];
    }
    out.run.push(call);
  }
  return out;
}

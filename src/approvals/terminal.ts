/**
 * Asking on a terminal (`magpie agent`): the question is printed and the
 * next line typed answers it — `y` allows once, `a` always, anything else
 * denies. Without a terminal nothing can be asked, so a question is a
 * denial with one line on stderr: a script never hangs on it.
 */
import type { ApprovalMode } from '../messages/approval.js';
import type { ApprovalRules, InlineQuestion, TurnApprovals } from './ports.js';
import { ruleLabel } from './question.js';

export interface TerminalApprovalsOptions {
  mode: ApprovalMode;
  execNetwork: boolean;
  rules: ApprovalRules;
  /** Prints `question` and resolves the next line typed; absent: no terminal to ask on. */
  ask?: (question: string) => Promise<string>;
  /** Where a denial without a terminal is said. */
  stderr: { write(text: string): unknown };
}

/** The question as a terminal shows it. */
export function terminalQuestion(q: InlineQuestion): string {
  const after = q.taint ? ` (after reading ${q.taint})` : '';
  const always = q.rule ? `, [a]lways allow ${ruleLabel(q.rule)}` : '';
  return `magpie wants to ${q.summary}${after}.\nAllow? [y]es once${always}, [N]o: `;
}

/** Reads an answer: y/yes once, a/always (when a rule is offered), anything else no. */
export function readTerminalAnswer(line: string, q: InlineQuestion): 'allow' | 'always' | 'deny' {
  const word = line.trim().toLowerCase();
  if (word === 'y' || word === 'yes') return 'allow';
  if (q.rule && (word === 'a' || word === 'always')) return 'always';
  return 'deny';
}

/** The approvals of a `magpie agent` turn. */
export function terminalApprovals(options: TerminalApprovalsOptions): TurnApprovals {
  const { ask, stderr } = options;
  return {
    mode: options.mode,
    execNetwork: options.execNetwork,
    rules: (chatKey) => options.rules.rules(chatKey),
    addRule: (chatKey, rule) => options.rules.addRule(chatKey, rule),
    askNow: async (q) => {
      if (!ask) {
        stderr.write(`magpie: not approved (no terminal to ask on): ${q.summary}\n`);
        return 'deny';
      }
      return readTerminalAnswer(await ask(terminalQuestion(q)), q);
    },
  };
}

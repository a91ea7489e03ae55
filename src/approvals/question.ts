/**
 * The words of an approval: a code to type, the question with its buttons,
 * the reading of `/approve CODE [always]` and `/deny CODE`, and what the
 * chat is told about an answer.
 */
import { randomInt } from 'node:crypto';
import type { AnswerOutcome, ApprovalAnswer, ApprovalRule, PendingApproval } from '../messages/approval.js';
import type { OutboundAction } from '../messages/messages.js';

/** Letters of a code: no 0/O or 1/I to confuse. */
const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

/** A fresh five-letter code, e.g. `K7QF2`. */
export function newCode(): string {
  let code = '';
  for (let i = 0; i < 5; i++) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return code;
}

/** How a rule reads: `git push`, `write AGENTS.md`, `message <channel>:<chat>`, a tool's name. */
export function ruleLabel(rule: ApprovalRule): string {
  if (rule.tool === 'exec' && rule.prefix) return rule.prefix;
  return rule.prefix ? `${rule.tool} ${rule.prefix}` : rule.tool;
}

/** The question's text: what the call does, why it asks now, and what to type. */
export function questionText(
  p: Pick<PendingApproval, 'code' | 'summary' | 'rule' | 'tainted'> & { taint?: string },
): string {
  const after = p.tainted ? ` (after reading ${p.taint ?? 'text from outside'})` : '';
  const lines = [`magpie wants to ${p.summary}${after}.`];
  lines.push(`Allow it? Answer /approve ${p.code} or /deny ${p.code}.`);
  if (p.rule)
    lines.push(`/approve ${p.code} always also allows ${quoteLabel(p.rule)} in this chat from now on.`);
  if (p.tainted)
    lines.push('It asks even where an "always" rule would allow it, because of what the turn read.');
  return lines.join('\n');
}

const quoteLabel = (rule: ApprovalRule) => `\`${ruleLabel(rule).replace(/`/g, "'")}\``;

/** The question's buttons: Allow once, Always allow (when a rule is offered), Deny. */
export function questionActions(p: Pick<PendingApproval, 'code' | 'rule'>): OutboundAction[] {
  const always = p.rule ? `Always allow ${ruleLabel(p.rule)}` : undefined;
  return [
    { label: 'Allow once', command: `/approve ${p.code}` },
    ...(always
      ? [
          {
            label: always.length > 40 ? `${always.slice(0, 39)}…` : always,
            command: `/approve ${p.code} always`,
          },
        ]
      : []),
    { label: 'Deny', command: `/deny ${p.code}` },
  ];
}

/**
 * Reads the argument of `/approve` or `/deny`: a code, and for /approve an
 * optional `always`. Undefined when it is not that.
 */
export function parseAnswer(
  command: 'approve' | 'deny',
  argument: string | undefined,
): Pick<ApprovalAnswer, 'code' | 'decision'> | undefined {
  const words = (argument ?? '').trim().split(/\s+/).filter(Boolean);
  const [code, extra, ...more] = words;
  if (!code || more.length > 0 || !/^[A-Za-z2-9]{5}$/.test(code)) return undefined;
  if (command === 'deny')
    return extra === undefined ? { code: code.toUpperCase(), decision: 'deny' } : undefined;
  if (extra === undefined) return { code: code.toUpperCase(), decision: 'allow' };
  return extra.toLowerCase() === 'always' ? { code: code.toUpperCase(), decision: 'always' } : undefined;
}

/** What the chat is told about an answer, at once. */
export function answerReply(
  outcome: AnswerOutcome,
  answer: Pick<ApprovalAnswer, 'code' | 'senderName'>,
): string {
  switch (outcome.kind) {
    case 'decided': {
      const p = outcome.pending;
      if (p.state === 'denied') return `Denied by ${answer.senderName}: magpie will not ${p.summary}.`;
      const always =
        outcome.pending.always && p.rule ? ` (and from now on ${quoteLabel(p.rule)} in this chat)` : '';
      return `Allowed by ${answer.senderName}${always}: going on.`;
    }
    case 'already':
      return `${answer.code} was already answered (${describeState(outcome.state)}${outcome.by ? ` by ${outcome.by}` : ''}).`;
    case 'expired':
      return `${answer.code} has expired: the question was not answered in time.`;
    case 'not-allowed':
      return `Only the person who asked may answer ${answer.code}.`;
    case 'none':
      return `No question ${answer.code} is waiting in this chat.`;
    case 'repeat':
      return '';
  }
}

function describeState(state: string): string {
  if (state === 'allowed' || state === 'running') return 'allowed';
  if (state === 'timeout') return 'timed out';
  return state;
}

/** What the model reads when a call was not allowed. */
export const NOT_APPROVED = {
  denied:
    'the user did not approve this call; it was not run. Do not try to get around that: ask what they want instead.',
  timeout: 'the user did not approve this call in time; it was not run.',
  cancelled: 'operation cancelled by user',
  interrupted:
    'this call was approved but magpie stopped while it ran; it may or may not have finished. Check before doing it again.',
} as const;

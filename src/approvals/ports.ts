/**
 * What a turn needs to ask before risky calls: the policy's settings, the
 * chat's "always" rules, and either a way to ask at once (a terminal) or
 * nothing, in which case the turn parks and the bus asks (the worker stores
 * the question and frees its slot; the answer resumes the turn anywhere).
 */
import type { ApprovalMode, ApprovalRule } from '../messages/approval.js';

/** A question asked at once: what the call does, the rule "always" would store, what the turn read. */
export interface InlineQuestion {
  summary: string;
  rule?: ApprovalRule;
  taint?: string;
}

export interface TurnApprovals {
  readonly mode: ApprovalMode;
  /** Sandboxed commands share the host's network: every exec asks. */
  readonly execNetwork: boolean;
  /** The "always allow" rules of the chat `chatKey` (`<channel>:<chatId>`). */
  rules(chatKey: string): Promise<ApprovalRule[]>;
  /** Asks now and waits for the answer (`magpie agent` on a terminal). Absent: the turn parks. */
  askNow?(question: InlineQuestion): Promise<'allow' | 'always' | 'deny'>;
  /** Stores an "always" rule given at once. */
  addRule?(chatKey: string, rule: ApprovalRule): Promise<void>;
}

/** Where a chat's "always allow" rules live (Redis in the daemon, a file for `magpie agent`). */
export interface ApprovalRules {
  rules(chatKey: string): Promise<ApprovalRule[]>;
  addRule(chatKey: string, rule: ApprovalRule): Promise<void>;
  /** True when the rule was there. */
  removeRule(chatKey: string, rule: ApprovalRule): Promise<boolean>;
}

/** The key a chat's rules live under. */
export const chatKeyOf = (chat: { channel: string; chatId: string }) => `${chat.channel}:${chat.chatId}`;

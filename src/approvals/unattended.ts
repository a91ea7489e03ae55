/**
 * Approvals where nobody can be asked at once and the turn cannot park: a
 * helper's loop (subagent, spawn) and the heartbeat. A risky call is denied,
 * logged, and the model reads why; the owner can do it in a chat, where it asks.
 */
import type { ApprovalMode } from '../messages/approval.js';
import type { TurnApprovals } from './ports.js';

export interface UnattendedOptions {
  mode: ApprovalMode;
  execNetwork: boolean;
  /** Told of each denial (the log). */
  onDenied: (summary: string) => void;
}

/** Approvals that deny every call that would ask; undefined when approvals are off. */
export function unattendedApprovals(options: UnattendedOptions): TurnApprovals | undefined {
  if (options.mode === 'off') return undefined;
  return {
    mode: options.mode,
    execNetwork: options.execNetwork,
    rules: async () => [],
    askNow: async (q) => {
      options.onDenied(q.summary);
      return 'deny';
    },
  };
}

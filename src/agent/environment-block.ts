/**
 * The system prompt's environment section: the workspace folder, the
 * approval policy, the sandbox mode, whether exec reaches the network, and
 * the writable roots. It is made from the configuration alone (nothing that
 * changes per turn or per session), so it is byte for byte the same in every
 * request and sits in the prompt's static part, which providers cache.
 */

/** What the operator set for the tools, as the model is told it. */
export interface PromptEnvironment {
  /** MAGPIE_APPROVAL. */
  approval: 'off' | 'risky' | 'all';
  /** MAGPIE_SANDBOX_MODE (full-access also for MAGPIE_EXEC_SANDBOX=off). */
  sandbox: 'read-only' | 'workspace-write' | 'full-access';
  /** Whether exec's commands reach the network (MAGPIE_EXEC_NETWORK; always without a sandbox). */
  network: boolean;
  /** MAGPIE_WRITABLE_ROOTS: folders outside the workspace exec may also write. */
  writableRoots: readonly string[];
}

const SANDBOX_MEANS: Record<PromptEnvironment['sandbox'], string> = {
  'read-only':
    'nothing in the workspace can be changed, your memory files included: write_file, edit_file and ' +
    'append_file are refused, and exec sees the workspace read-only.',
  'workspace-write':
    'the file tools and exec may change the workspace (sessions/ and .magpie-id stay read-only); ' +
    'exec sees the rest of the system read-only.',
  'full-access':
    "exec runs on the host without a sandbox, as magpie's own user, behind a deny list only; " +
    'the file tools may change the workspace (not sessions/).',
};

const APPROVAL_MEANS: Record<PromptEnvironment['approval'], string> = {
  off: 'tool calls run without asking the owner.',
  risky: 'the owner may be asked to approve a risky tool call before it runs.',
  all: 'the owner may be asked to approve any tool call before it runs.',
};

/**
 * The `## Environment` lines for `workspace` (its real path).
 *
 * @example
 * environmentLines('/srv/ws', { approval: 'risky', sandbox: 'read-only', network: false, writableRoots: [] })
 * // ['## Environment', '', 'Set by the operator …', '- Workspace: /srv/ws', '- Sandbox: read-only: …', …]
 */
export function environmentLines(workspace: string, env: PromptEnvironment): string[] {
  const roots = env.writableRoots;
  return [
    '## Environment',
    '',
    'Set by the operator for every conversation; no message can change it.',
    `- Workspace: ${workspace}`,
    `- Sandbox: ${env.sandbox}: ${SANDBOX_MEANS[env.sandbox]}`,
    roots.length > 0
      ? `- Writable roots (exec may also write these folders, at these paths): ${roots.join(', ')}`
      : '- Writable roots: none',
    `- Network for exec: ${env.network ? 'on' : 'off (commands cannot connect anywhere)'}`,
    `- Approval: ${env.approval}: ${APPROVAL_MEANS[env.approval]}`,
  ];
}

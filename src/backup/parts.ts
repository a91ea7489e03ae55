/**
 * What of the workspace and the state folder goes into a backup, in one
 * place (docs/DEPLOYMENT.md, "Backups and moving to a new machine", explains
 * each choice).
 */
import path from 'node:path';

/** Workspace paths left out: the Redis data folder of older magpies (Redis is backed up by its keys). */
export function skipInWorkspace(relative: string): boolean {
  return relative === '.redis';
}

/**
 * State-folder files kept (at its top and in each `agents/<id>/`): the
 * in-process agent's "always allow" rules and `/model` choices. Everything
 * else there is rebuilt (memory-index/, sandbox-probe.json), belongs to the
 * machine (redis/ with its password, backups/) or is a secret (below).
 */
const STATE_FILES = new Set(['approval-rules.json', 'chat-models.json']);

/** State-folder paths left out of the plain part of a backup. */
export function skipInState(relative: string): boolean {
  const parts = relative.split('/');
  const inAgent = parts[0] === 'agents' && parts.length >= 2;
  const rest = inAgent ? parts.slice(2) : parts;
  if (inAgent && rest.length === 0) return false; // the agent's own folder: walk it
  if (parts[0] === 'agents' && parts.length === 1) return false;
  return !(rest.length === 1 && STATE_FILES.has(rest[0] as string));
}

/**
 * The secret files `--with-secrets` adds, encrypted: `.env` (as `env`), the
 * dashboard's token and the Matrix devices' crypto stores (their keys: without
 * them a restored bot cannot read its encrypted rooms).
 */
export function secretPaths(stateDir: string): { token: string; matrix: string } {
  return { token: path.join(stateDir, 'dashboard-token'), matrix: path.join(stateDir, 'matrix') };
}

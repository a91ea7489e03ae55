/**
 * The workspace's identity: a random id kept in `<workspace>/.magpie-id`,
 * made by `magpie init` (or on the first start of a workspace made before).
 * The bus records the id of the workspace it serves, so a worker on another
 * machine with its own folder (another memory, other sessions) is told so
 * instead of answering from it. The file tools may read it but never change it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { link, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AppError, describeError, ExitCode } from '../errors/index.js';
import { isMissing } from './cached-file.js';

/** The file, at the workspace's top level, that holds its id. */
export const WORKSPACE_ID_FILE = '.magpie-id';

/** What an id looks like: a UUID as `randomUUID` makes it. */
const ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The workspace's identity and whether this call made it. */
export interface WorkspaceIdentity {
  id: string;
  /** True when the id file did not exist and was written now. */
  created: boolean;
}

/**
 * The id of `workspace`, or undefined when it has none yet.
 *
 * @throws AppError WORKSPACE_MISSING (exit 2) when the file is not an id (edited or damaged).
 */
export async function readWorkspaceId(workspace: string): Promise<string | undefined> {
  const file = path.join(workspace, WORKSPACE_ID_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw new AppError('WORKSPACE_MISSING', `cannot read ${file} (${describeError(err)})`, {
      cause: err,
      exitCode: ExitCode.config,
    });
  }
  const id = text.trim();
  if (!ID_PATTERN.test(id)) {
    throw new AppError(
      'WORKSPACE_MISSING',
      `${file} does not hold a workspace id (damaged?); put back the original, or delete it and run "magpie init --workspace ${workspace}"`,
      { exitCode: ExitCode.config },
    );
  }
  return id;
}

/**
 * The id of `workspace`, made now when it has none. Safe when several
 * processes (on several machines sharing the folder) do it at once: the file
 * appears whole or not at all (written aside, then hard-linked into place,
 * which fails when another got there first), and everyone reads the winner's.
 *
 * @throws AppError WORKSPACE_MISSING (exit 2) when the folder does not exist or cannot be written.
 * @example const { id } = await ensureWorkspaceId('/srv/magpie/workspace');
 */
export async function ensureWorkspaceId(workspace: string): Promise<WorkspaceIdentity> {
  const existing = await readWorkspaceId(workspace);
  if (existing) return { id: existing, created: false };
  const isFolder = await stat(workspace).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isFolder) {
    throw new AppError(
      'WORKSPACE_MISSING',
      `the workspace ${workspace} does not exist; run "magpie init --workspace ${workspace}" (or set MAGPIE_WORKSPACE to the shared workspace)`,
      { exitCode: ExitCode.config },
    );
  }
  const file = path.join(workspace, WORKSPACE_ID_FILE);
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const id = randomUUID();
  try {
    await writeFile(temp, `${id}\n`, { encoding: 'utf8', flag: 'wx' });
    await link(temp, file);
    return { id, created: true };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      const winner = await readWorkspaceId(workspace);
      if (winner) return { id: winner, created: false };
    }
    throw new AppError('WORKSPACE_MISSING', `cannot write ${file} (${describeError(err)})`, {
      cause: err,
      exitCode: ExitCode.config,
    });
  } finally {
    await rm(temp, { force: true });
  }
}

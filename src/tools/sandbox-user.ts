/**
 * Who sandboxed commands run as when magpie runs as root: never host root,
 * but an unprivileged host user (`nobody` unless MAGPIE_EXEC_USER names
 * another). bwrap itself still starts as root (so it can bind a workspace
 * under /root and make the namespaces), then `setpriv` drops to that user
 * with no capabilities, no supplementary groups and no_new_privs before the
 * command starts. Since the command must write the workspace, the
 * workspace's root-owned files and folders are handed over to that user
 * (`handOverWorkspace`) before a command runs.
 */
import { constants } from 'node:fs';
import { lstat, open, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError } from '../errors/index.js';

/** A host user sandboxed commands run as. */
export interface ExecUser {
  name: string;
  uid: number;
  gid: number;
}

/** The user name or uid a root magpie runs commands as by default. */
export const DEFAULT_EXEC_USER = 'nobody';

/**
 * Looks `user` (a name or a numeric uid) up in /etc/passwd.
 *
 * @throws ConfigError when there is no such user, or it is root (uid 0).
 */
export async function lookUpExecUser(user: string, passwdFile = '/etc/passwd'): Promise<ExecUser> {
  const wanted = user.trim();
  const text = await readFile(passwdFile, 'utf8');
  for (const line of text.split('\n')) {
    const [name, , uid, gid] = line.split(':');
    if (name === undefined || uid === undefined || gid === undefined) continue;
    if (name !== wanted && uid !== wanted) continue;
    const found = { name, uid: Number(uid), gid: Number(gid) };
    if (!Number.isInteger(found.uid) || !Number.isInteger(found.gid)) continue;
    if (found.uid === 0 || found.gid === 0) {
      throw new ConfigError(`MAGPIE_EXEC_USER=${wanted} is root: sandboxed commands never run as root`);
    }
    return found;
  }
  throw new ConfigError(
    `MAGPIE_EXEC_USER=${wanted}: no such user in ${passwdFile} (create one, e.g. useradd --system --no-create-home magpie-exec)`,
  );
}

/** How many entries one hand-over looks at, at most (a huge workspace is handed over partly). */
const MAX_ENTRIES = 50_000;

/**
 * Gives `user` the root-owned (uid 0) folders and files of `workspace`, so
 * commands running as that user can write them; `skip` (sessions/, masked
 * paths, the id file) and everything under it stay as they are. Symlinks are
 * not followed, files with more than one link are left alone (a hard link to
 * a file outside), and each entry is opened with O_NOFOLLOW and checked to
 * be the one listed before `fchown`.
 *
 * Call it only while no sandboxed command runs, so nothing can swap a
 * folder for a symlink during the walk.
 */
export async function handOverWorkspace(workspace: string, user: ExecUser, skip: string[]): Promise<void> {
  const skipped = new Set(skip);
  let seen = 0;
  const visit = async (entry: string): Promise<void> => {
    if (seen++ >= MAX_ENTRIES || skipped.has(entry)) return;
    const stats = await lstat(entry).catch(() => undefined);
    if (!stats || stats.isSymbolicLink()) return;
    const directory = stats.isDirectory();
    if (!directory && !stats.isFile()) return;
    if (stats.uid === 0 && (directory || stats.nlink === 1)) {
      const flags = constants.O_RDONLY | constants.O_NOFOLLOW | (directory ? constants.O_DIRECTORY : 0);
      const handle = await open(entry, flags | constants.O_NONBLOCK).catch(() => undefined);
      if (handle) {
        try {
          const now = await handle.stat();
          if (now.ino === stats.ino && now.dev === stats.dev && now.uid === 0)
            await handle.chown(user.uid, user.gid);
        } finally {
          await handle.close();
        }
      }
    }
    if (!directory) return;
    const names = await readdir(entry).catch(() => [] as string[]);
    for (const name of names) await visit(path.join(entry, name));
  };
  await visit(workspace);
}

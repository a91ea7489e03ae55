/**
 * The disk space a workspace takes (allocated blocks, so sparse files count
 * for what they use), by a bounded walk that follows no symlink: exec polls
 * it while a sandboxed command runs and stops the command past
 * MAGPIE_WORKSPACE_MAX_BYTES.
 */
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';

/** Entries one measurement looks at, at most; past it the sum is a lower bound. */
const MAX_ENTRIES = 200_000;

/** Bytes allocated under `dir` (itself included), looking at no more than `maxEntries` entries. */
export async function workspaceBytes(dir: string, maxEntries = MAX_ENTRIES): Promise<number> {
  let total = 0;
  let seen = 0;
  const pending = [dir];
  while (pending.length > 0 && seen < maxEntries) {
    const current = pending.pop() as string;
    const names = await readdir(current).catch(() => [] as string[]);
    for (const name of names) {
      if (++seen > maxEntries) break;
      const file = path.join(current, name);
      // Gone since the listing: the command deletes as it goes.
      const stats = await lstat(file).catch(() => undefined);
      if (!stats) continue;
      total += stats.blocks * 512;
      if (stats.isDirectory()) pending.push(file);
    }
  }
  return total;
}

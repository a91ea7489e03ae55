/**
 * list_dir: the entries of a workspace folder, sorted, folders marked with
 * a trailing `/`, capped so a huge folder cannot flood the context.
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { fail, ok, type Tool } from './types.js';
import { fileError, resolveInWorkspace } from './workspace-path.js';

export interface ListDirOptions {
  /** @defaultValue 500 */
  maxEntries?: number;
}

const parameters = z.object({
  path: z
    .string()
    .default('.')
    .describe('Folder path, relative to the workspace; default the workspace itself'),
});

/** The list_dir tool, confined to `workspace`. */
export function createListDirTool(workspace: string, options: ListDirOptions = {}): Tool<typeof parameters> {
  const maxEntries = options.maxEntries ?? 500;
  return {
    name: 'list_dir',
    description: 'List the entries of a folder in the workspace; folders end with "/".',
    parameters,
    async execute({ path: requested }) {
      try {
        const dir = await resolveInWorkspace(workspace, requested);
        const info = await stat(dir);
        if (!info.isDirectory()) return fail(`${requested} is a file, not a folder; use read_file`);
        const entries = await readdir(dir, { withFileTypes: true });
        const names = await Promise.all(
          entries.map(async (entry) => {
            const isDir =
              entry.isDirectory() ||
              (entry.isSymbolicLink() &&
                (await stat(path.join(dir, entry.name)).then(
                  (st) => st.isDirectory(),
                  () => false, // a broken symlink is listed as a plain entry
                )));
            return isDir ? `${entry.name}/` : entry.name;
          }),
        );
        names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
        if (names.length === 0) return ok(`(${requested} is empty)`);
        const shown = names.slice(0, maxEntries);
        const more = names.length - shown.length;
        return ok(
          more > 0
            ? `${shown.join('\n')}\n[… and ${more} more entries; showing the first ${maxEntries}]`
            : shown.join('\n'),
        );
      } catch (err) {
        return fail(fileError(err, requested).message);
      }
    },
  };
}

/**
 * list_dir: the entries of a workspace folder, sorted, folders marked with
 * a trailing `/`, capped so a huge folder cannot flood the context. The
 * folder is opened through WorkspaceFiles (never through a symlink that
 * leads out); a symlink is marked as a folder only when it leads to one
 * inside the workspace.
 */
import { z } from 'zod';
import { WorkspaceFiles } from '../workspace/workspace-files.js';
import { FileToolError, fileError } from '../workspace/workspace-path.js';
import type { Confinement } from '../workspace/workspace-walk.js';
import { fail, ok, type Tool } from './types.js';

export interface ListDirOptions {
  /** @defaultValue 500 */
  maxEntries?: number;
  /** How paths are confined (tests force `portable`). @defaultValue 'auto' */
  confinement?: Confinement;
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
  const files = new WorkspaceFiles({ workspace, confinement: options.confinement });
  return {
    name: 'list_dir',
    description: 'List the entries of a folder in the workspace; folders end with "/".',
    parameters,
    async execute({ path: requested }) {
      try {
        const { entries, total } = await files.list(requested, maxEntries);
        if (total === 0) return ok(`(${requested} is empty)`);
        const shown = entries.map((entry) => (entry.isDir ? `${entry.name}/` : entry.name)).join('\n');
        const more = total - entries.length;
        return ok(
          more > 0 ? `${shown}\n[… and ${more} more entries; showing the first ${maxEntries}]` : shown,
        );
      } catch (err) {
        const error = fileError(err, requested);
        if (error instanceof FileToolError && error.reason === 'missing')
          return fail(`folder not found: ${requested}`);
        return fail(
          error instanceof FileToolError && error.reason === 'not-directory'
            ? `${error.message}; use read_file`
            : error.message,
        );
      }
    },
  };
}

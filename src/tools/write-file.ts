/**
 * write_file: creates or replaces a file in the workspace. Parent folders are
 * created; the write is atomic (a temp file in the same folder, then
 * rename), so a crash never leaves a half-written file. Goes through
 * WorkspaceFiles: never outside the workspace, never into sessions/.
 */
import { z } from 'zod';
import { WorkspaceFiles } from '../workspace/workspace-files.js';
import { fileError } from '../workspace/workspace-path.js';
import type { Confinement } from '../workspace/workspace-walk.js';
import { fail, ok, type Tool } from './types.js';

export interface FileToolOptions {
  /** How paths are confined (tests force `portable`). @defaultValue 'auto' */
  confinement?: Confinement;
}

const parameters = z.object({
  path: z.string().describe('File path, relative to the workspace'),
  content: z.string().describe('The full new content of the file'),
});

/** The write_file tool, confined to `workspace`. */
export function createWriteFileTool(
  workspace: string,
  options: FileToolOptions = {},
): Tool<typeof parameters> {
  const files = new WorkspaceFiles({ workspace, confinement: options.confinement });
  return {
    name: 'write_file',
    description:
      'Create or overwrite a file in the workspace with the given content (parent folders are created). ' +
      'To change part of a file, use edit_file instead.',
    parameters,
    async execute({ path: requested, content }) {
      try {
        await files.replace(requested, content);
        return ok(`wrote ${Buffer.byteLength(content)} bytes to ${requested}`);
      } catch (err) {
        return fail(fileError(err, requested).message);
      }
    },
  };
}

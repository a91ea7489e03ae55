/**
 * append_file: adds text to the end of a workspace file, creating it (and
 * its folders) when missing. Used for daily notes and logs. Goes through
 * WorkspaceFiles: a single-link regular file inside the workspace, never in
 * sessions/.
 */
import { z } from 'zod';
import { WorkspaceFiles } from '../workspace/workspace-files.js';
import { fileError } from '../workspace/workspace-path.js';
import { fail, ok, type Tool } from './types.js';
import type { FileToolOptions } from './write-file.js';

const parameters = z.object({
  path: z.string().describe('File path, relative to the workspace'),
  content: z
    .string()
    .describe('Text to add at the end of the file (include a trailing newline if you want one)'),
});

/** The append_file tool, confined to `workspace`. */
export function createAppendFileTool(
  workspace: string,
  options: FileToolOptions = {},
): Tool<typeof parameters> {
  const files = new WorkspaceFiles({ workspace, confinement: options.confinement });
  return {
    name: 'append_file',
    description:
      'Append text to the end of a file in the workspace; the file and its folders are created if missing.',
    parameters,
    async execute({ path: requested, content }) {
      try {
        await files.append(requested, content);
        return ok(`appended ${Buffer.byteLength(content)} bytes to ${requested}`);
      } catch (err) {
        return fail(fileError(err, requested).message);
      }
    },
  };
}

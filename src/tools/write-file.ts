/**
 * write_file: creates or replaces a file in the workspace. Parent folders are
 * created; the write is atomic (a temp file in the same folder, then
 * rename), so a crash never leaves a half-written file. Goes through
 * WorkspaceFiles: never outside the workspace, never into sessions/.
 */
import { z } from 'zod';
import { fileTool, pathParameter } from './file-tool.js';

const parameters = z.object({
  path: pathParameter,
  content: z.string().describe('The full new content of the file'),
});

/** The write_file tool, confined to the workspace it is given. */
export const createWriteFileTool = fileTool({
  name: 'write_file',
  description:
    'Create or overwrite a file in the workspace with the given content (parent folders are created). ' +
    'To change part of a file, use edit_file instead.',
  parameters,
  async change(files, { path: requested, content }) {
    await files.replace(requested, content);
    return `wrote ${Buffer.byteLength(content)} bytes to ${requested}`;
  },
});

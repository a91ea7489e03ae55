/**
 * append_file: adds text to the end of a workspace file, creating it (and
 * its folders) when missing. Used for daily notes and logs. Goes through
 * WorkspaceFiles: a single-link regular file inside the workspace, never in
 * sessions/.
 */
import { z } from 'zod';
import { fileTool, pathParameter } from './file-tool.js';

const parameters = z.object({
  path: pathParameter,
  content: z
    .string()
    .describe('Text to add at the end of the file (include a trailing newline if you want one)'),
});

/** The append_file tool, confined to the workspace it is given. */
export const createAppendFileTool = fileTool({
  name: 'append_file',
  description:
    'Append text to the end of a file in the workspace; the file and its folders are created if missing.',
  parameters,
  async change(files, { path: requested, content }) {
    await files.append(requested, content);
    return `appended ${Buffer.byteLength(content)} bytes to ${requested}`;
  },
});

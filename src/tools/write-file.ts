/**
 * write_file: creates or replaces a file in the workspace. Parent folders are
 * created; the write is atomic (temp file in the same folder, then rename),
 * so a crash never leaves a half-written file.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { AppError, describeError } from '../errors/index.js';
import { fail, ok, type Tool } from './types.js';
import { fileError, resolveInWorkspace } from './workspace-path.js';

/**
 * Writes `content` to `file` atomically: a temp file beside it, then rename.
 * An existing file keeps its permission bits. Parent folders must exist.
 */
export async function writeFileAtomic(file: string, content: string): Promise<void> {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const mode = await stat(file).then(
    (st) => (st.isDirectory() ? undefined : st.mode & 0o7777),
    () => undefined, // a new file gets the default mode
  );
  try {
    await writeFile(temp, content, { flag: 'wx', ...(mode === undefined ? {} : { mode }) });
    await rename(temp, file);
  } catch (err) {
    await unlink(temp).catch((cleanupErr: unknown) => {
      if (!(cleanupErr instanceof Error && 'code' in cleanupErr && cleanupErr.code === 'ENOENT')) {
        throw new Error(`could not remove temp file ${temp}: ${describeError(cleanupErr)}`, { cause: err });
      }
    });
    throw err;
  }
}

/**
 * Resolves `requested` for writing: confined to the workspace, not a folder,
 * parent folders created. Returns the real absolute path.
 * @throws AppError phrased for the model.
 */
export async function prepareFileWrite(workspace: string, requested: string): Promise<string> {
  const file = await resolveInWorkspace(workspace, requested, { forWrite: true });
  const existing = await stat(file).catch((err: unknown) => {
    if (err instanceof Error && 'code' in err && err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (existing?.isDirectory()) throw new AppError('TOOL_FAILED', `${requested} is a directory, not a file`);
  await mkdir(path.dirname(file), { recursive: true });
  return file;
}

const parameters = z.object({
  path: z.string().describe('File path, relative to the workspace'),
  content: z.string().describe('The full new content of the file'),
});

/** The write_file tool, confined to `workspace`. */
export function createWriteFileTool(workspace: string): Tool<typeof parameters> {
  return {
    name: 'write_file',
    description:
      'Create or overwrite a file in the workspace with the given content (parent folders are created). ' +
      'To change part of a file, use edit_file instead.',
    parameters,
    async execute({ path: requested, content }) {
      try {
        const file = await prepareFileWrite(workspace, requested);
        await writeFileAtomic(file, content);
        return ok(`wrote ${Buffer.byteLength(content)} bytes to ${requested}`);
      } catch (err) {
        return fail(fileError(err, requested).message);
      }
    },
  };
}

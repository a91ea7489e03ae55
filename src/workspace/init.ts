/** Creates a workspace from the templates, never overwriting a file that exists. */
import { constants } from 'node:fs';
import { copyFile, mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { AppError, describeError } from '../errors/index.js';
import { isMissing } from './cached-file.js';
import { listTemplateFiles, templatesDir } from './templates.js';

export interface InitWorkspaceOptions {
  /** Where the templates are. @defaultValue the package's `workspace/` folder */
  templates?: string;
}

export interface InitWorkspaceResult {
  /** Relative paths (with `/`) of files copied. */
  created: string[];
  /** Relative paths of files that already existed and were left alone. */
  kept: string[];
}

/**
 * Copies every template into `target` (created if missing). Files already
 * there are kept as they are, so running it twice is harmless.
 *
 * @example const { created, kept } = await initWorkspace('/home/me/.magpie');
 */
export async function initWorkspace(
  target: string,
  options: InitWorkspaceOptions = {},
): Promise<InitWorkspaceResult> {
  const source = path.resolve(options.templates ?? templatesDir());
  const dest = path.resolve(target);
  try {
    await mkdir(dest, { recursive: true });
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? describeError(err);
    throw new AppError('WORKSPACE_MISSING', `cannot create the workspace folder ${dest} (${reason})`, {
      cause: err,
    });
  }
  const created: string[] = [];
  const kept: string[] = [];
  for (const rel of await listTemplateFiles(source)) {
    const to = path.join(dest, ...rel.split('/'));
    await mkdir(path.dirname(to), { recursive: true });
    try {
      await copyFile(path.join(source, ...rel.split('/')), to, constants.COPYFILE_EXCL);
      created.push(rel);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      kept.push(rel);
    }
  }
  return { created, kept };
}

/** True when `target` is the templates folder itself (same real path). */
export async function isTemplatesDir(target: string, templates: string = templatesDir()): Promise<boolean> {
  try {
    return (await realpath(target)) === (await realpath(templates));
  } catch (err) {
    if (isMissing(err)) return false;
    throw err;
  }
}

/**
 * What the tools that change workspace files (write_file, edit_file,
 * append_file) share: their options, the `path` parameter, the confined
 * WorkspaceFiles they go through, and one rule for failures: a refused or
 * failed change is a tool result the model reads, worded for the path it gave.
 * With a read-only workspace (MAGPIE_SANDBOX_MODE=read-only) every call is
 * refused in one line before anything is opened.
 */
import { z } from 'zod';
import { WorkspaceFiles } from '../workspace/workspace-files.js';
import { fileError } from '../workspace/workspace-path.js';
import type { Confinement } from '../workspace/workspace-walk.js';
import { fail, ok, type Tool } from './types.js';

/**
 * Records a tool's change of memory/MEMORY.md in its history (memory/history/history.ts):
 * runs the change under the history's lock, a hand edit before it recorded first.
 */
export interface ChangeRecorder {
  around<T>(who: string, change: () => Promise<T>): Promise<T>;
}

/** Options of the file-changing tools. */
export interface FileToolOptions {
  /** How paths are confined (tests force `portable`). @defaultValue 'auto' */
  confinement?: Confinement;
  /**
   * The workspace is read-only (MAGPIE_SANDBOX_MODE=read-only): the tool stays in the list and
   * every call is refused with {@link readOnlyRefusal}, touching nothing. @defaultValue false
   */
  readOnly?: boolean;
  /** Where changes of MEMORY.md are recorded, by the tool's name. @defaultValue none */
  history?: ChangeRecorder;
}

/** What a file-changing tool answers, whatever it was asked, when the workspace is read-only. */
export function readOnlyRefusal(tool: string): string {
  return `${tool} refused: the workspace is read-only here (MAGPIE_SANDBOX_MODE=read-only); nothing in it can be changed, so tell the user what you would have written instead`;
}

/** The `path` parameter of every file tool. */
export const pathParameter = z.string().describe('File path, relative to the workspace');

/** A file-changing tool: what the model sees of it, and the change it makes. */
export interface FileToolDefinition<P extends z.ZodType<{ path: string }>> {
  name: string;
  description: string;
  /** Its parameters, `path` among them. */
  parameters: P;
  /**
   * Changes the file at `args.path` through `files` and resolves with what the
   * model is told; a throw becomes a failed result naming that path.
   */
  change(files: WorkspaceFiles, args: z.infer<P>): Promise<string>;
}

/**
 * The factory of a file-changing tool: given the workspace (and options), the
 * tool confined to it.
 *
 * @example
 * export const createAppendFileTool = fileTool({
 *   name: 'append_file', description: '…', parameters,
 *   async change(files, { path, content }) { await files.append(path, content); return `appended to ${path}`; },
 * });
 */
export function fileTool<P extends z.ZodType<{ path: string }>>(
  definition: FileToolDefinition<P>,
): (workspace: string, options?: FileToolOptions) => Tool<P> {
  return (workspace, options = {}) => {
    if (options.readOnly) {
      return {
        name: definition.name,
        description: `${definition.description} Refused here: the workspace is read-only.`,
        parameters: definition.parameters,
        execute: async () => fail(readOnlyRefusal(definition.name)),
      };
    }
    const files = new WorkspaceFiles({ workspace, confinement: options.confinement });
    return {
      name: definition.name,
      description: definition.description,
      parameters: definition.parameters,
      async execute(args) {
        try {
          const change = () => definition.change(files, args);
          return ok(await (options.history ? options.history.around(definition.name, change) : change()));
        } catch (err) {
          return fail(fileError(err, args.path).message);
        }
      },
    };
  };
}

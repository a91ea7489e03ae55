/**
 * read_file: returns a workspace text file, by lines. What it returns is
 * capped (the model is told where it stopped and how to read on); binary
 * files and files over a size limit are refused without being read whole.
 * The file is opened through WorkspaceFiles: regular files with one link
 * only, never through a symlink that leads out, never blocking on a FIFO.
 */
import { z } from 'zod';
import { mib, readUpTo, WorkspaceFiles } from '../workspace/workspace-files.js';
import { FileToolError, fileError } from '../workspace/workspace-path.js';
import type { Confinement } from '../workspace/workspace-walk.js';
import { pathParameter } from './file-tool.js';
import { fail, ok, type Tool } from './types.js';

export interface ReadFileOptions {
  /** @defaultValue 50_000 */
  maxChars?: number;
  /** Files larger than this are refused. @defaultValue 10 MiB */
  maxFileBytes?: number;
  /** How paths are confined (tests force `portable`). @defaultValue 'auto' */
  confinement?: Confinement;
}

const SNIFF_BYTES = 8192;

const parameters = z.object({
  path: pathParameter,
  offset: z.number().int().min(1).optional().describe('First line to return (1-based); default 1'),
  limit: z.number().int().min(1).optional().describe('How many lines to return; default all that fit'),
});

/** True when the first bytes look binary: a NUL byte, or many control characters. */
export function looksBinary(sample: Uint8Array): boolean {
  if (sample.length === 0) return false;
  let control = 0;
  for (const byte of sample) {
    if (byte === 0) return true;
    if (byte < 9 || (byte > 13 && byte < 32)) control++;
  }
  return control / sample.length > 0.1;
}

/**
 * Selects lines `offset..offset+limit-1` and caps them at `maxChars`, cutting
 * at a line end where possible. Returns the text plus a note when cut.
 */
export function sliceLines(
  text: string,
  offset: number,
  limit: number | undefined,
  maxChars: number,
): { text: string; note?: string } {
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  const total = lines.length;
  if (offset > total)
    return { text: '', note: `[the file has ${total} lines; offset ${offset} is past the end]` };
  const last = Math.min(total, limit === undefined ? total : offset - 1 + limit);
  let out = '';
  let shownUpTo = offset - 1;
  for (let i = offset - 1; i < last; i++) {
    const line = lines[i] ?? '';
    const piece = (i === offset - 1 ? '' : '\n') + line;
    if (out.length + piece.length > maxChars) {
      if (shownUpTo === offset - 1) {
        return {
          text: line.slice(0, maxChars),
          note: `[truncated: line ${i + 1} is longer than ${maxChars} characters; showed its start only. Use exec (e.g. cut, grep) to inspect it]`,
        };
      }
      break;
    }
    out += piece;
    shownUpTo = i + 1;
  }
  if (shownUpTo < last) {
    return {
      text: out,
      note: `[truncated at ${maxChars} characters: showed lines ${offset}-${shownUpTo} of ${total}; call read_file with offset=${shownUpTo + 1} to read further]`,
    };
  }
  if (last < total) {
    return {
      text: out,
      note: `[showed lines ${offset}-${last} of ${total}; use offset=${last + 1} to read further]`,
    };
  }
  return { text: out };
}

/** The read_file tool, confined to `workspace`. */
export function createReadFileTool(
  workspace: string,
  options: ReadFileOptions = {},
): Tool<typeof parameters> {
  const maxChars = options.maxChars ?? 50_000;
  const maxFileBytes = options.maxFileBytes ?? 10 * 1024 * 1024;
  const files = new WorkspaceFiles({ workspace, confinement: options.confinement });
  return {
    name: 'read_file',
    description:
      `Read a text file in the workspace. Returns at most ${maxChars} characters; ` +
      'use offset and limit (in lines) to read long files in parts.',
    parameters,
    async execute({ path: requested, offset = 1, limit }) {
      try {
        const bytes = await files.read(requested, async (handle, st) => {
          if (st.size > maxFileBytes) {
            throw new FileToolError(
              'too-large',
              `${requested} is ${mib(st.size)}, over the ${mib(maxFileBytes)} read limit; ` +
                'use exec with head, tail or grep to look at parts of it',
            );
          }
          // Sniffed before the whole is read: a binary file is refused at the cost of 8 KiB.
          if (looksBinary(await readUpTo(handle, Math.min(st.size, SNIFF_BYTES)))) return undefined;
          return readUpTo(handle, st.size);
        });
        if (bytes === undefined)
          return fail(`${requested} looks like a binary file; read_file only reads text`);
        const text = bytes.toString('utf8');
        if (text === '') return ok(`(${requested} is empty)`);
        const sliced = sliceLines(text, offset, limit, maxChars);
        return ok(sliced.note ? `${sliced.text}\n${sliced.note}` : sliced.text);
      } catch (err) {
        const error = fileError(err, requested);
        return fail(
          error instanceof FileToolError && error.reason === 'directory'
            ? `${requested} is a directory; use list_dir to see what it holds`
            : error.message,
        );
      }
    },
  };
}

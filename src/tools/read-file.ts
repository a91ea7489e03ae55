/**
 * read_file: returns a workspace text file, by lines. What it returns is
 * capped (the model is told where it stopped and how to read on); binary
 * files and files over a size limit are refused without being read whole.
 */
import { open, stat } from 'node:fs/promises';
import { z } from 'zod';
import { fail, ok, type Tool } from './types.js';
import { fileError, resolveInWorkspace } from './workspace-path.js';

export interface ReadFileOptions {
  /** @defaultValue 50_000 */
  maxChars?: number;
  /** Files larger than this are refused. @defaultValue 10 MiB */
  maxFileBytes?: number;
}

const SNIFF_BYTES = 8192;

const parameters = z.object({
  path: z.string().describe('File path, relative to the workspace'),
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

async function sniff(file: string): Promise<Uint8Array> {
  const handle = await open(file, 'r');
  try {
    const buffer = new Uint8Array(SNIFF_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, SNIFF_BYTES, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

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
  return {
    name: 'read_file',
    description:
      `Read a text file in the workspace. Returns at most ${maxChars} characters; ` +
      'use offset and limit (in lines) to read long files in parts.',
    parameters,
    async execute({ path: requested, offset = 1, limit }) {
      try {
        const file = await resolveInWorkspace(workspace, requested);
        const info = await stat(file);
        if (info.isDirectory()) return fail(`${requested} is a directory; use list_dir to see what it holds`);
        if (info.size > maxFileBytes) {
          return fail(
            `${requested} is ${mib(info.size)}, over the ${mib(maxFileBytes)} read limit; ` +
              'use exec with head, tail or grep to look at parts of it',
          );
        }
        if (looksBinary(await sniff(file))) {
          return fail(`${requested} looks like a binary file; read_file only reads text`);
        }
        const handle = await open(file, 'r');
        const text = await handle.readFile('utf8').finally(() => handle.close());
        if (text === '') return ok(`(${requested} is empty)`);
        const sliced = sliceLines(text, offset, limit, maxChars);
        return ok(sliced.note ? `${sliced.text}\n${sliced.note}` : sliced.text);
      } catch (err) {
        return fail(fileError(err, requested).message);
      }
    },
  };
}

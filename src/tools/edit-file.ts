/**
 * edit_file: replaces one exact piece of text in a workspace file. The old
 * text must occur exactly once, so the model cannot change the wrong place;
 * the rewrite is atomic and lands in the very folder the file was read from.
 */
import { z } from 'zod';
import { AppError } from '../errors/index.js';
import { fileTool, pathParameter } from './file-tool.js';

const parameters = z.object({
  path: pathParameter,
  old_text: z.string().describe('The exact text to replace; it must occur exactly once in the file'),
  new_text: z.string().describe('The replacement text'),
});

/** Non-overlapping occurrences of `needle` in `haystack`. */
export function countOccurrences(haystack: string, needle: string): number {
  if (needle === '') return 0;
  let count = 0;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length))
    count++;
  return count;
}

/** The edit_file tool, confined to the workspace it is given. */
export const createEditFileTool = fileTool({
  name: 'edit_file',
  description:
    'Replace old_text with new_text in a workspace file. old_text must match the file exactly ' +
    '(whitespace included) and occur exactly once; add surrounding lines to make it unique.',
  parameters,
  async change(files, { path: requested, old_text: oldText, new_text: newText }) {
    if (oldText === '') {
      throw new AppError('TOOL_FAILED', 'old_text is empty; copy the exact text to replace from the file');
    }
    await files.replace(requested, (text) => {
      const matches = countOccurrences(text, oldText);
      if (matches === 0) {
        throw new AppError(
          'TOOL_FAILED',
          `old_text not found in ${requested}; read the file and copy the exact text to replace`,
        );
      }
      if (matches > 1) {
        throw new AppError(
          'TOOL_FAILED',
          `old_text matches ${matches} times in ${requested}, add context so it matches exactly once`,
        );
      }
      const at = text.indexOf(oldText);
      return text.slice(0, at) + newText + text.slice(at + oldText.length);
    });
    return `edited ${requested}`;
  },
});

/**
 * Tool names of MCP tools as the model sees them: `<server>__<tool>`, made
 * safe for the function-name rules of chat-completion APIs (letters, digits,
 * `_` and `-`, at most 64 characters). A name that would be longer keeps its
 * start and ends in a short hash of the full pair, so two long names stay apart.
 */
import { createHash } from 'node:crypto';

/** The longest function name the chat-completion APIs accept. */
export const MAX_TOOL_NAME_LENGTH = 64;

/** Separates the server from the tool in a model-facing name. */
export const SERVER_SEPARATOR = '__';

/** `text` with every character outside `[A-Za-z0-9_-]` replaced by `_` (never empty). */
export function safeNamePart(text: string): string {
  const safe = text.replace(/[^A-Za-z0-9_-]/g, '_');
  return safe === '' ? '_' : safe;
}

/**
 * The model-facing name of `tool` on `server`.
 *
 * @example mcpToolName('files', 'read_file') // 'files__read_file'
 * @example mcpToolName('my server', 'get.page') // 'my_server__get_page'
 */
export function mcpToolName(server: string, tool: string): string {
  const full = `${safeNamePart(server)}${SERVER_SEPARATOR}${safeNamePart(tool)}`;
  if (full.length <= MAX_TOOL_NAME_LENGTH) return full;
  const hash = createHash('sha256').update(`${server}\0${tool}`).digest('hex').slice(0, 8);
  return `${full.slice(0, MAX_TOOL_NAME_LENGTH - hash.length - 1)}_${hash}`;
}

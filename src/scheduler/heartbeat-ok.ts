/**
 * The heartbeat reply filter: a reply that is `HEARTBEAT_OK` at its start or
 * end (Markdown emphasis, backticks or HTML tags around it ignored) with at
 * most a little other text means "nothing needs attention" and is not sent.
 */

/** The token the heartbeat prompt asks for. */
export const HEARTBEAT_OK = 'HEARTBEAT_OK';

/** Default: how much other text an OK reply may carry and still be dropped. */
export const HEARTBEAT_OK_MAX_OTHER_CHARS = 300;

const MARKUP = '[\\s*_`~]*';
const AT_START = new RegExp(`^${MARKUP}${HEARTBEAT_OK}(?![A-Za-z0-9])[\\s*_\`~.!:,;-]*`);
const AT_END = new RegExp(`(?<![A-Za-z0-9])${MARKUP}${HEARTBEAT_OK}(?![A-Za-z0-9])[\\s*_\`~.!]*$`);

/**
 * True when the reply should be dropped: the token sits at its start or end
 * and the rest (markup removed) is at most `maxOtherChars` characters.
 * @example isHeartbeatOk('**HEARTBEAT_OK**') // true
 * @example isHeartbeatOk('All fine, HEARTBEAT_OK as asked, but the server is down') // false
 */
export function isHeartbeatOk(reply: string, maxOtherChars = HEARTBEAT_OK_MAX_OTHER_CHARS): boolean {
  const text = reply.replace(/<\/?[A-Za-z][^>]*>/g, '').trim();
  let rest: string | undefined;
  const start = AT_START.exec(text);
  if (start) rest = text.slice(start[0].length);
  else {
    const end = AT_END.exec(text);
    if (end) rest = text.slice(0, end.index);
  }
  if (rest === undefined) return false;
  return rest.trim().length <= maxOtherChars;
}

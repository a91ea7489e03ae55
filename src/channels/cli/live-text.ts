/**
 * What a terminal prints of an answer that streams in: a pure function of
 * what was printed so far and what arrived. A terminal cannot take text back,
 * so:
 * - a snapshot that extends the text on screen prints only its new suffix;
 * - one that the screen already holds (a prefix of it, or empty) prints nothing;
 * - any other (a new LLM iteration after tools, a turn redone differently)
 *   starts a fresh line and prints in full;
 * - the final reply prints what is not yet shown, or, when it does not extend
 *   the text on screen, a fresh line and the whole reply, then a newline.
 * So the output always ends with exactly the reply and a newline, as when
 * nothing streamed (`prefix + reply + '\n'`).
 */

/** What was printed of the answer so far. */
export interface LiveText {
  /** The text of the current block (one LLM iteration) as shown. */
  readonly block: string;
  /** Something was printed and the cursor is not at the start of a line. */
  readonly midLine: boolean;
}

/** A step's output and the state after it. */
export interface LiveStep {
  output: string;
  state: LiveText;
}

/** Nothing printed yet. */
export const EMPTY_LIVE_TEXT: LiveText = { block: '', midLine: false };

/**
 * The output for a snapshot `text` (the whole text so far of the current
 * iteration). `prefix` starts every block (`magpie> ` in chat).
 *
 * @example liveStep(EMPTY_LIVE_TEXT, 'Hel').output // 'Hel'; then 'Hello' prints 'lo'
 */
export function liveStep(state: LiveText, text: string, prefix = ''): LiveStep {
  if (state.block.startsWith(text)) return { output: '', state };
  if (state.block !== '' && text.startsWith(state.block))
    return printed(state, text.slice(state.block.length), text);
  return printed(state, `${freshLine(state)}${prefix}${text}`, text);
}

/**
 * The output for the turn's final reply: the rest of it when it extends the
 * text on screen, else the whole of it on a fresh line; always ends the line.
 */
export function finalStep(state: LiveText, reply: string, prefix = ''): string {
  if (state.block !== '' && reply.startsWith(state.block)) return `${reply.slice(state.block.length)}\n`;
  return `${freshLine(state)}${prefix}${reply}\n`;
}

/**
 * The output for a whole message in the middle of a turn (the message tool):
 * a line of its own. The block on screen stays, so a late snapshot of it
 * prints nothing.
 */
export function messageStep(state: LiveText, content: string, prefix = ''): LiveStep {
  return { output: `${freshLine(state)}${prefix}${content}\n`, state: { ...state, midLine: false } };
}

/** The output that ends the line being written, if any (before an error on stderr, or a status line). */
export function endLine(state: LiveText): LiveStep {
  return { output: freshLine(state), state: { ...state, midLine: false } };
}

function freshLine(state: LiveText): string {
  return state.midLine ? '\n' : '';
}

function printed(state: LiveText, output: string, block: string): LiveStep {
  const midLine = output === '' ? state.midLine : !output.endsWith('\n');
  return { output, state: { block, midLine } };
}

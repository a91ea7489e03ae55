/**
 * One turn's answer printed in a terminal as it streams (`magpie send`,
 * `magpie chat`): the answer's text on stdout by the rules of live-text.ts,
 * and the progress line while tools run ("reading notes/plan.md") kept out
 * of the answer. Where stdout is a terminal and the caller asks for it (chat),
 * the progress line is a dim status line on stdout that the next text
 * replaces; otherwise it is a line of its own on stderr, so stdout redirected
 * to a file holds the answer only.
 */
import type { LiveUpdate } from '../../messages/live-update.js';
import type { SendOptions } from './client.js';
import { EMPTY_LIVE_TEXT, endLine, finalStep, type LiveText, liveStep, messageStep } from './live-text.js';

/** Where a TerminalReply writes. */
export interface TerminalStream {
  write(text: string): unknown;
  /** A terminal (not a file or a pipe). */
  isTTY?: boolean;
}

export interface TerminalReplyOptions {
  /** Where the answer goes (process.stdout). */
  out: TerminalStream;
  /** Where progress lines go when they are not shown in place (process.stderr). */
  err: TerminalStream;
  /** Starts every block of answer text, e.g. `magpie> `. @defaultValue '' */
  prefix?: string;
  /** Shows the progress line in place on `out` when `out` is a terminal (chat). @defaultValue false */
  statusInPlace?: boolean;
}

const DIM = '\x1b[2m';
const RESET = '\x1b[0m';
/** Back to the start of the line, then erase it. */
const CLEAR_LINE = '\r\x1b[2K';

/** A progress line as one line of plain text: control characters (escapes, newlines) become spaces. */
function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ');
}

/** Prints one turn's live snapshots, mid-turn messages and final reply. */
export class TerminalReply {
  readonly #out: TerminalStream;
  readonly #err: TerminalStream;
  readonly #prefix: string;
  readonly #inPlace: boolean;
  #text: LiveText = EMPTY_LIVE_TEXT;
  #progress: string | undefined;
  /** A status line is on `out`'s current line. */
  #status = false;

  constructor(options: TerminalReplyOptions) {
    this.#out = options.out;
    this.#err = options.err;
    this.#prefix = options.prefix ?? '';
    this.#inPlace = (options.statusInPlace ?? false) && options.out.isTTY === true;
  }

  /**
   * The {@link SendOptions} callbacks that print a turn here: its mid-turn
   * messages, and its live snapshots when `stream` is true.
   */
  handlers(stream: boolean): Pick<SendOptions, 'onMessage' | 'onLive'> {
    return {
      onMessage: (m) => this.message(m.content),
      ...(stream ? { onLive: (update: LiveUpdate) => this.live(update) } : {}),
    };
  }

  /** A snapshot of the answer being written: its new text, then its progress line if that changed. */
  live(update: Pick<LiveUpdate, 'text' | 'progress'>): void {
    const step = liveStep(this.#text, update.text, this.#prefix);
    this.#write(step.output);
    this.#text = step.state;
    if (update.progress === undefined || update.progress === '') {
      this.#progress = undefined;
    } else if (update.progress !== this.#progress) {
      this.#progress = update.progress;
      this.#showProgress(oneLine(update.progress));
    }
  }

  /** A whole message in the middle of the turn (the message tool). */
  message(content: string): void {
    const step = messageStep(this.#text, content, this.#prefix);
    this.#write(step.output);
    this.#text = step.state;
  }

  /** The turn's reply: what is not shown yet, ending the line. */
  final(content: string): void {
    this.#write(finalStep(this.#text, content, this.#prefix));
    this.#text = EMPTY_LIVE_TEXT;
    this.#progress = undefined;
  }

  /** Ends the turn without a reply on `out` (an error goes to stderr next): ends the line being written. */
  abandon(): void {
    this.#endLine();
    this.#clearStatus();
    this.#text = EMPTY_LIVE_TEXT;
    this.#progress = undefined;
  }

  #showProgress(progress: string): void {
    if (this.#inPlace) {
      this.#endLine();
      this.#clearStatus();
      this.#out.write(`${DIM}… ${progress}${RESET}`);
      this.#status = true;
      return;
    }
    // Both on one terminal: end the answer's line first so the progress line does not break into it.
    if (this.#out.isTTY === true && this.#err.isTTY === true) this.#endLine();
    this.#err.write(this.#err.isTTY === true ? `${DIM}… ${progress}${RESET}\n` : `… ${progress}\n`);
  }

  #endLine(): void {
    const step = endLine(this.#text);
    this.#write(step.output);
    this.#text = step.state;
  }

  /** Writes answer text to `out`, first erasing a status line there. */
  #write(text: string): void {
    if (text === '') return;
    this.#clearStatus();
    this.#out.write(text);
  }

  #clearStatus(): void {
    if (!this.#status) return;
    this.#out.write(CLEAR_LINE);
    this.#status = false;
  }
}

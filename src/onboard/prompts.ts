/**
 * The questions of `magpie onboard` over node:readline: one line per answer,
 * a default taken on Enter, hidden input for keys and tokens (nothing typed is
 * echoed, on a terminal or not), and answers piped in line by line (lines that
 * arrive before their question waits are kept, not lost). Ctrl-C or the end of
 * the input cancels with a CancelledError.
 */
import { createInterface, type Interface } from 'node:readline';
import { Writable } from 'node:stream';
import { CancelledError } from '../errors/index.js';

/** Where the questions come from and go to. */
export interface PromptStreams {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream;
}

/** How one question is asked. */
export interface AskOptions {
  /** Taken when the answer is empty. @defaultValue none: an empty answer is returned as '' */
  default?: string | undefined;
  /** Shown in brackets instead of the default itself (a masked key). @defaultValue the default */
  defaultLabel?: string | undefined;
  /** Nothing typed is echoed. @defaultValue false */
  hidden?: boolean;
}

/**
 * Asks questions one at a time.
 *
 * @example
 * const prompter = new Prompter({ input: process.stdin, output: process.stdout });
 * const key = await prompter.ask('API key', { hidden: true });
 * prompter.close();
 */
export class Prompter {
  /** Aborted when the user presses Ctrl-C (long waits listen to it too). */
  readonly signal: AbortSignal;
  private readonly rl: Interface;
  private readonly lines: AsyncIterator<string>;
  private readonly output: NodeJS.WritableStream;
  private readonly abort = new AbortController();
  private muted = false;
  /** On a terminal readline echoes the answer and its newline; otherwise nothing is echoed. */
  private readonly terminal: boolean;

  constructor(streams: PromptStreams) {
    this.output = streams.output;
    this.signal = this.abort.signal;
    const real = streams.output;
    // readline echoes what is typed through its output: a hidden answer mutes it.
    const echo = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        if (!this.muted) real.write(chunk);
        done();
      },
    });
    this.terminal = streams.input.isTTY === true;
    this.rl = createInterface({ input: streams.input, output: echo, terminal: this.terminal });
    this.lines = this.rl[Symbol.asyncIterator]();
    this.rl.on('SIGINT', () => this.abort.abort());
  }

  /** Writes text as it is (no newline added). */
  say(text: string): void {
    this.output.write(text);
  }

  /**
   * Asks `question` and returns the trimmed answer, or the default on an empty one.
   * Rejects with CancelledError on Ctrl-C or when the input ends first.
   */
  async ask(question: string, options: AskOptions = {}): Promise<string> {
    const shown = options.defaultLabel ?? options.default;
    this.output.write(`${question}${shown ? ` [${shown}]` : ''}: `);
    this.muted = options.hidden === true;
    let answer: string | undefined;
    try {
      answer = (await this.nextLine(question)).trim();
    } finally {
      // Piped answers are not echoed by anyone: a visible one is written out, so the transcript reads as typed.
      if (this.muted) this.output.write('\n');
      else if (!this.terminal) this.output.write(`${answer ?? ''}\n`);
      this.muted = false;
    }
    return answer === '' ? (options.default ?? '') : (answer as string);
  }

  /** A yes/no question; Enter takes `fallback`. Anything else is asked again. */
  async confirm(question: string, fallback: boolean): Promise<boolean> {
    for (;;) {
      const answer = (await this.ask(`${question} (${fallback ? 'Y/n' : 'y/N'})`)).toLowerCase();
      if (answer === '') return fallback;
      if (/^(y|yes)$/.test(answer)) return true;
      if (/^(n|no)$/.test(answer)) return false;
      this.output.write('  please answer y or n\n');
    }
  }

  /** Stops reading the input. */
  close(): void {
    this.rl.close();
  }

  private async nextLine(question: string): Promise<string> {
    if (this.signal.aborted) throw cancelled();
    const aborted = new Promise<never>((_, reject) => {
      this.signal.addEventListener('abort', () => reject(cancelled()), { once: true });
    });
    const next = await Promise.race([this.lines.next(), aborted]);
    if (next.done) {
      throw new CancelledError(`the input ended before "${question}" was answered; nothing was written`);
    }
    return next.value;
  }
}

function cancelled(): CancelledError {
  return new CancelledError('onboarding cancelled; nothing was written');
}

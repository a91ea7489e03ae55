/**
 * `magpie agent` writing an answer as the model writes it (in-process, no
 * bus): deltas are gathered per LLM call and printed by the terminal rules of
 * channels/cli/live-text.ts, so stdout always ends with exactly the reply.
 * Used when stdout is a terminal (a pipe gets whole replies, as scripts expect)
 * and CLI_STREAM / MAGPIE_STREAM is not off.
 */
import type { TurnOptions } from '../agent/types.js';
import { EMPTY_LIVE_TEXT, finalStep, type LiveText, liveStep } from '../channels/cli/live-text.js';

/** One turn's output on a stream (stdout). */
export class TerminalStream {
  #text = '';
  #state: LiveText = EMPTY_LIVE_TEXT;

  constructor(private readonly out: Pick<NodeJS.WriteStream, 'write'>) {}

  /** The turn options that feed this stream. */
  turnOptions(): Pick<TurnOptions, 'onDelta' | 'onIteration'> {
    return {
      onIteration: (n) => {
        if (n > 1) this.#text = '';
      },
      onDelta: (delta) => {
        this.#text += delta;
        const step = liveStep(this.#state, this.#text);
        if (step.output !== '') this.out.write(step.output);
        this.#state = step.state;
      },
    };
  }

  /** Prints what the reply adds to what was shown (or the whole reply on a fresh line), then a newline. */
  finish(reply: string): void {
    this.out.write(finalStep(this.#state, reply));
    this.#text = '';
    this.#state = EMPTY_LIVE_TEXT;
  }

  /** Ends a line left open by a turn that printed some text and then stopped or failed. */
  endLine(): void {
    if (this.#state.midLine) this.out.write('\n');
    this.#text = '';
    this.#state = EMPTY_LIVE_TEXT;
  }
}

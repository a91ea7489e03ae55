/**
 * Whether any text of a call has reached the caller yet. A provider may retry
 * a call or fail over to another model only before the first delta, so the
 * user never sees text twice; both the OpenAI provider and the fallback
 * provider watch their deltas this way.
 */

/** Forwards a request's deltas and remembers whether any went out. */
export class DeltaWatch {
  #streamed = false;
  /** The request's `onDelta`, recording each call; undefined when the request has none. */
  readonly forward: ((text: string) => void) | undefined;

  constructor(onDelta: ((text: string) => void) | undefined) {
    this.forward = onDelta
      ? (text: string) => {
          this.#streamed = true;
          onDelta(text);
        }
      : undefined;
  }

  /** True once any text was forwarded. */
  get streamed(): boolean {
    return this.#streamed;
  }
}

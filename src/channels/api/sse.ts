/**
 * A streamed chat completion in OpenAI's format: Server-Sent Events, each
 * `data:` a `chat.completion.chunk` (the first with the assistant's role,
 * then the text as it grows, then the finish reason), a usage chunk with no
 * choices when the client asked for it, and `data: [DONE]`. The headers go
 * out with the first text (or after a few seconds of a turn that says
 * nothing yet, then with comments to keep the connection alive), so a
 * request refused at once (a budget spent, a failure) still gets its proper
 * status code.
 */
import type { Response } from 'express';

export interface SseIdentity {
  id: string;
  model: string;
  created: number;
}

export class SseAnswer {
  #started = false;
  /** Text held until the stream begins (whole messages before the model's first words). */
  readonly #held: string[] = [];

  constructor(
    private readonly res: Response,
    private readonly identity: SseIdentity,
  ) {}

  /** Whether the stream began (status and headers sent). */
  get started(): boolean {
    return this.#started;
  }

  /**
   * Sends `text` as the next piece of the answer; with `hold`, keeps it until the stream begins
   * (so a turn refused at once, after a notice, still gets its status code).
   */
  delta(text: string, hold = false): void {
    if (text === '' || this.res.writableEnded) return;
    if (hold && !this.#started) {
      this.#held.push(text);
      return;
    }
    this.#start();
    this.#content(text);
  }

  /**
   * Ends the answer: the finish reason (its chunk also lists the turn's messages one by one,
   * magpie's extension), the usage when asked, `[DONE]`.
   */
  finish(usage: Record<string, unknown> | undefined, messages: readonly string[]): void {
    if (this.res.writableEnded) return;
    this.#start();
    this.#chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }], undefined, { messages });
    if (usage) this.#chunk([], usage);
    this.res.end('data: [DONE]\n\n');
  }

  /** Ends a stream that had begun with an error event (the `openai` clients raise it). */
  error(message: string, type: string): void {
    if (this.res.writableEnded) return;
    this.#start();
    this.#write({ error: { message, type, param: null, code: null } });
    this.res.end('data: [DONE]\n\n');
  }

  /** Begins the stream without text (a turn that is slow to say anything): headers and the role chunk. */
  begin(): void {
    if (!this.res.writableEnded) this.#start();
  }

  /** An SSE comment, so proxies and clients see the connection alive while the turn works. */
  keepAlive(): void {
    if (this.#started && !this.res.writableEnded) this.res.write(': keep-alive\n\n');
  }

  #start(): void {
    if (this.#started) return;
    this.#started = true;
    this.res.status(200);
    this.res.setHeader('content-type', 'text/event-stream; charset=utf-8');
    this.res.setHeader('cache-control', 'no-cache, no-transform');
    this.res.setHeader('x-accel-buffering', 'no');
    this.res.flushHeaders();
    this.#chunk([
      { index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
    ]);
    for (const text of this.#held.splice(0)) this.#content(text);
  }

  #content(text: string): void {
    this.#chunk([{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }]);
  }

  #chunk(
    choices: unknown[],
    usage?: Record<string, unknown>,
    magpie?: { messages: readonly string[] },
  ): void {
    this.#write({
      id: this.identity.id,
      object: 'chat.completion.chunk',
      created: this.identity.created,
      model: this.identity.model,
      choices,
      ...(usage ? { usage } : {}),
      ...(magpie ? { magpie } : {}),
    });
  }

  #write(payload: unknown): void {
    this.res.write(`data: ${JSON.stringify(payload)}\n\n`);
  }
}

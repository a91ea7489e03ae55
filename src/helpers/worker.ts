/**
 * The helper worker: consumes the `helpers` queue in the worker role. Each
 * job runs one spawned helper to its end and publishes its final text as an
 * InboundMessage on channel `system`, queued in the origin session's mailbox
 * (so it waits behind that chat's turns) with `metadata.origin` and
 * `metadata.helper`. The message id is derived from the helper id, and a
 * marker in Redis stops a redone job from publishing the result twice.
 */
import { z } from 'zod';
import type { Bus } from '../bus/bus.js';
import type { ConsumedJob, Consumer, ConsumerTuning } from '../bus/consumer.js';
import { HELPERS_QUEUE } from '../bus/helpers-queue.js';
import { helperKeys } from '../bus/keys.js';
import { AppError, describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { type HelperJob, HelperJobSchema } from '../messages/helper-job.js';
import { type TraceSpan, traceOf, withTrace } from '../telemetry/tracing.js';
import { type HelperOutcome, type HelperRun, preview } from './runner.js';

/** How long the "result published" marker is kept. */
const PUBLISHED_TTL_S = 7 * 24 * 3_600;

export interface HelperWorkerOptions extends ConsumerTuning {
  bus: Bus;
  runner: { run(run: HelperRun): Promise<HelperOutcome> };
  logger: Logger;
}

/** The id of a helper's result message (deterministic: a redone job produces the same one). */
export function helperResultId(helperId: string): string {
  return `helper-result:${helperId}`;
}

/** The text of a helper's result message. */
export function helperResultText(job: HelperJob, text: string, failed = false): string {
  const name = job.label ? `"${job.label}" (${job.id})` : job.id;
  const task = job.task.length > 300 ? `${job.task.slice(0, 300)}…` : job.task;
  return failed
    ? `Helper ${name} failed on its task "${task}": ${text}`
    : `Helper ${name} finished its task "${task}".\n\nResult:\n${text}`;
}

export class HelperWorker {
  readonly #o: HelperWorkerOptions;
  readonly #log: Logger;
  #consumer: Consumer | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: HelperWorkerOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: 'helper-worker' });
  }

  async start(): Promise<void> {
    const { bus, runner: _r, logger: _l, ...tuning } = this.#o;
    this.#consumer = bus.consume(HELPERS_QUEUE, (job) => this.#process(job), tuning);
    await this.#consumer.ready();
  }

  /**
   * Stops taking helper jobs; running ones finish (bounded by the consumer's
   * shutdown timeout). Idempotent: the same promise every time.
   */
  close(): Promise<void> {
    this.#closing ??= this.#consumer?.close() ?? Promise.resolve();
    return this.#closing;
  }

  async #process(consumed: ConsumedJob): Promise<void> {
    const parsed = HelperJobSchema.safeParse(consumed.data);
    if (!parsed.success) {
      this.#log.warn(
        { job: consumed.id, issue: z.prettifyError(parsed.error) },
        'malformed helper job moved aside',
      );
      throw new AppError('INVALID_MESSAGE', `malformed helper job ${consumed.id}`);
    }
    const job = parsed.data;
    const log = this.#log.child({ helper: job.id, attempt: consumed.attemptsMade + 1 });
    const marker = helperKeys.published(this.#o.bus.prefix, job.id);
    if (await this.#o.bus.markers.isSet(marker)) {
      log.info('helper result already published; nothing to redo');
      return;
    }
    // The helper's span: a child of the turn that spawned it; its result's turn continues from here.
    const span = this.#o.bus.tracing.start('helper spawn', {
      parent: traceOf({ trace: job.trace }),
      attributes: { 'magpie.helper.kind': 'spawn', 'magpie.channel': job.origin.channel },
    });
    try {
      await this.#run(job, log, marker, consumed, span);
    } finally {
      span.end();
    }
  }

  async #run(job: HelperJob, log: Logger, marker: string, consumed: ConsumedJob, span: TraceSpan) {
    let outcome: HelperOutcome;
    try {
      outcome = await this.#o.runner.run({
        id: job.id,
        task: job.task,
        ...(job.label ? { label: job.label } : {}),
        depth: job.depth,
        origin: job.origin,
        kind: 'spawn',
      });
    } catch (err) {
      const transient = err instanceof AppError ? err.transient : true;
      if (transient && consumed.attemptsMade + 1 < consumed.maxAttempts) {
        log.warn({ err: describeError(err) }, 'helper failed; will retry');
        throw err;
      }
      log.error({ err: describeError(err) }, 'helper failed');
      span.fail(err instanceof AppError ? err.code : 'error');
      await this.#publish(job, helperResultText(job, describeError(err), true), marker, span);
      return;
    }
    await this.#publish(job, helperResultText(job, outcome.text), marker, span);
    log.info({ outcome: outcome.outcome, preview: preview(outcome.text) }, 'helper result published');
  }

  async #publish(job: HelperJob, content: string, marker: string, span: TraceSpan): Promise<void> {
    const { origin } = job;
    await this.#o.bus.publishInbound({
      id: helperResultId(job.id),
      channel: 'system',
      chatId: origin.chatId,
      ...(origin.threadId ? { threadId: origin.threadId } : {}),
      sessionKey: origin.sessionKey,
      senderId: 'helper',
      content,
      metadata: withTrace(
        {
          origin: {
            channel: origin.channel,
            chatId: origin.chatId,
            ...(origin.threadId ? { threadId: origin.threadId } : {}),
            sessionKey: origin.sessionKey,
          },
          helper: { id: job.id, ...(job.label ? { label: job.label } : {}) },
        },
        span,
      ),
    });
    await this.#o.bus.markers.set(marker, PUBLISHED_TTL_S);
  }
}

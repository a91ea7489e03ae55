/**
 * The turn worker: consumes the `inbound` queue. A turn job names a session;
 * the worker takes every pending mailbox entry (in order), runs the agent,
 * drains later arrivals between LLM iterations, queues the reply under a
 * deterministic id, and only then trims what it took from the mailbox.
 * A sweep (on start, then every `sweepIntervalMs`) wakes every session whose
 * mailbox still holds messages: a turn job may fail for good (stalled past its
 * limit, its attempts spent on Redis outages) while its messages wait.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { failureReply, isTransient } from '../agent/failure-reply.js';
import { originOf } from '../agent/turn-request.js';
import type { AgentRunner, ParkedDecision, TurnOptions, TurnResult } from '../agent/types.js';
import type { TurnApprovals } from '../approvals/ports.js';
import { unattendedApprovals } from '../approvals/unattended.js';
import { routingMetadata } from '../bus/bus.js';
import type { ConsumedJob, Consumer, ConsumerTuning } from '../bus/consumer.js';
import type { Mailbox } from '../bus/mailbox.js';
import { APPROVAL_TIMEOUT_QUEUE, INBOUND_QUEUE } from '../bus/queues.js';
import type { TurnRecorder } from '../bus/turn-recorder.js';
import { AppError, describeError } from '../errors/index.js';
import { positiveWholeNumber } from '../errors/option-checks.js';
import { runAll } from '../lifecycle/run-all.js';
import type { Logger } from '../log/index.js';
import type { ApprovalMode, PendingApproval } from '../messages/approval.js';
import { type InboundMessage, isInternalChannel, type OutboundMessageInput } from '../messages/messages.js';
import { errorId, replyId, turnId } from '../messages/outbound-ids.js';
import type { ToolCall } from '../providers/types.js';
import {
  NO_TRACING,
  type TraceParent,
  type TraceSpan,
  type Tracing,
  traceOf,
  withTrace,
} from '../telemetry/tracing.js';
import { stepSpans } from '../telemetry/turn-spans.js';
import type { VoiceReplies } from '../voice/voice-replies.js';
import { LivePublisher } from './live-publisher.js';
import {
  DEFAULT_APPROVAL_TIMEOUT_MS,
  decisionOf,
  isScheduled,
  pendingApprovalOf,
  questionMessage,
  resumedHead,
} from './parked-turns.js';
import type { TurnBus } from './ports.js';

const TurnJobSchema = z.object({ sessionKey: z.string().min(1) });
const TimeoutJobSchema = z.object({ sessionKey: z.string().min(1), code: z.string().min(1) });

export interface TurnWorkerOptions extends ConsumerTuning {
  bus: TurnBus;
  agent: AgentRunner;
  logger: Logger;
  /**
   * Turns run at once by this worker (different sessions); main.ts passes
   * MAGPIE_WORKER_CONCURRENCY (or --concurrency). @defaultValue 1
   */
  concurrency?: number;
  /** IANA time zone whose days token use is counted in (MAGPIE_TIMEZONE). @defaultValue the system's time zone */
  timezone?: string;
  /**
   * Whether answers to a channel are shown while written (config `streamsTo`): the worker then
   * publishes live snapshots (bus/live.ts). @defaultValue never
   */
  streams?: (channel: string) => boolean;
  /** Pace of live snapshots (see LivePublisher). @defaultValue 500 ms before the first, 250 ms apart */
  livePace?: { firstAfterMs?: number; intervalMs?: number };
  /**
   * Ask before risky tool calls (MAGPIE_APPROVAL): turns park on a question, which outlives
   * every restart, and go on when it is answered or times out. @defaultValue off
   */
  approval?: { mode: ApprovalMode; timeoutMs: number; execNetwork: boolean; unattended?: 'ask' | 'deny' };
  /**
   * How often the worker wakes sessions whose mailbox holds messages (also once on start): the
   * longest a message waits after its turn job failed for good. @defaultValue 30000
   */
  sweepIntervalMs?: number;
  /**
   * Spoken replies (MAGPIE_TTS): after a reply's text is queued, its chat may get it spoken too,
   * as a second outbound message with its own id (src/voice). @defaultValue none: text only
   */
  voice?: Pick<VoiceReplies, 'afterReply'>;
  /** A span per turn, continuing the trace its head message carries. @defaultValue off */
  tracing?: Tracing;
}

export class TurnWorker {
  /** A unique name of this worker (marks its running turns). */
  readonly id = `worker-${randomUUID().slice(0, 8)}`;
  private readonly bus: TurnBus;
  private readonly agent: AgentRunner;
  private readonly logger: Logger;
  private readonly tuning: ConsumerTuning;
  private readonly running = new Map<string, AbortController>();
  /** Each session's turn job in this process: a second one waits for the first (see process). */
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly sweepIntervalMs: number;
  private sweepTimer: NodeJS.Timeout | undefined;
  private readonly streams: (channel: string) => boolean;
  private readonly livePace: TurnWorkerOptions['livePace'];
  /** Per-turn figures and running turns in Redis, for status and the dashboard. */
  private readonly recorder: TurnRecorder;
  private consumer: Consumer | undefined;
  private timeouts: Consumer | undefined;
  private readonly approval: TurnWorkerOptions['approval'];
  private readonly voice: TurnWorkerOptions['voice'];
  private readonly tracing: Tracing;
  private unsubscribe: (() => Promise<void>) | undefined;
  private closing: Promise<void> | undefined;

  constructor(options: TurnWorkerOptions) {
    this.bus = options.bus;
    this.agent = options.agent;
    this.logger = options.logger.child({ component: 'turn-worker' });
    const {
      bus: _bus,
      agent: _agent,
      logger: _logger,
      timezone,
      streams,
      livePace,
      approval,
      sweepIntervalMs,
      voice,
      tracing,
      ...tuning
    } = options;
    this.voice = voice;
    this.tracing = tracing ?? NO_TRACING;
    this.sweepIntervalMs = positiveWholeNumber('sweepIntervalMs', sweepIntervalMs ?? 30_000);
    this.approval = approval?.mode === 'off' ? undefined : approval;
    this.streams = streams ?? (() => false);
    this.livePace = livePace;
    this.tuning = tuning;
    this.recorder = options.bus.turnRecorder({
      worker: this.id,
      logger: this.logger,
      ...(timezone ? { timezone } : {}),
    });
  }

  /** Subscribes to cancellations, then starts taking turn jobs. */
  async start(): Promise<void> {
    this.unsubscribe = await this.bus.onCancel((sessionKey) => {
      const controller = this.running.get(sessionKey);
      if (controller) {
        this.logger.info({ session: sessionKey }, 'turn cancelled by /stop');
        controller.abort();
      }
    });
    this.consumer = this.bus.consume(INBOUND_QUEUE, (job) => this.process(job), this.tuning);
    await this.consumer.ready();
    if (this.approval) {
      this.timeouts = this.bus.consume(APPROVAL_TIMEOUT_QUEUE, (job) => this.expire(job), this.tuning);
      await this.timeouts.ready();
    }
    await this.sweep();
    this.sweepTimer = setInterval(() => void this.sweep(), this.sweepIntervalMs);
    this.sweepTimer.unref();
  }

  /** Wakes every session whose mailbox holds messages; a failure (Redis away) waits for the next sweep. */
  private async sweep(): Promise<void> {
    try {
      const woken = await this.bus.wakePendingMailboxes();
      this.logger.debug({ sessions: woken }, 'pending mailboxes woken');
    } catch (err) {
      this.logger.warn({ err: describeError(err) }, 'pending mailboxes not swept; next sweep retries');
    }
  }

  /** A question's time-out: settles it as timed out when it still waits (the turn job then goes on). */
  private async expire(job: ConsumedJob): Promise<void> {
    const parsed = TimeoutJobSchema.safeParse(job.data);
    if (!parsed.success) throw new AppError('INVALID_MESSAGE', `malformed approval time-out ${job.id}`);
    const { sessionKey, code } = parsed.data;
    if (await this.bus.expireApproval(sessionKey, code))
      this.logger.info(
        { session: sessionKey, approval: code, decidedBy: 'timeout' },
        'approval timed out: denied',
      );
  }

  /** Number of turns running in this process now. */
  get activeTurns(): number {
    return this.running.size;
  }

  /** Stops taking jobs and lets running turns finish (bounded). Idempotent. */
  close(): Promise<void> {
    clearInterval(this.sweepTimer);
    this.closing ??= runAll([
      () => this.consumer?.close(),
      () => this.timeouts?.close(),
      () => this.unsubscribe?.(),
    ]);
    return this.closing;
  }

  /**
   * One turn job, after any turn of its session still running here: a job whose lock expired
   * while Redis was away is handed out again while its first run goes on, and the two must not
   * take the same messages at once.
   */
  private async process(job: ConsumedJob): Promise<void> {
    const sessionKey = this.sessionOf(job);
    const before = this.inFlight.get(sessionKey);
    const current = (before ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => this.processTurn(job, sessionKey));
    this.inFlight.set(sessionKey, current);
    try {
      await current;
    } finally {
      if (this.inFlight.get(sessionKey) === current) this.inFlight.delete(sessionKey);
    }
  }

  /** Takes the session's pending messages, runs them as one turn, answers, then trims what it took. */
  private async processTurn(job: ConsumedJob, sessionKey: string): Promise<void> {
    const log = this.logger.child({ session: sessionKey, job: job.id });
    // A turn parked on a question goes first: its chat's messages wait until it is settled.
    if (this.approval && !(await this.settleParked(job, sessionKey, log))) return;
    const mailbox = this.bus.mailbox(sessionKey);
    const first = await mailbox.read(0);
    if (first.messages.length === 0) {
      await mailbox.trim(first.entries);
      log.debug({ skipped: first.entries.length }, 'empty mailbox, nothing to do');
      return;
    }
    const batch = [...first.messages];
    const head = batch[0] as InboundMessage;
    const id = turnId(sessionKey, head.id);
    const turn: TakenTurn = {
      span: this.turnSpan(id, head.channel, traceOf(head.metadata), batch),
      receivedAt: Date.parse(head.receivedAt),
      job,
      sessionKey,
      log,
      mailbox,
      batch,
      taken: [...first.entries],
      head,
      id,
      attempt: randomUUID(),
      origin: chatOf(head),
      since: new Date(),
    };
    const controller = new AbortController();
    this.running.set(sessionKey, controller);
    const live = this.livePublisher(head, turn.id, batch, log);
    // Claimed before the session is read (turn-fence.ts).
    await Promise.all([
      this.activity(turn.origin, true, log),
      this.recorder.started(turn.id, sessionKey, turn.since),
      this.claim(sessionKey, turn.attempt, log),
    ]);
    try {
      if (await this.runAndAnswer(turn, controller.signal, live)) await mailbox.trim(turn.taken);
    } finally {
      await this.endTurn(turn, live);
    }
  }

  /** The job's session. @throws AppError INVALID_MESSAGE for a malformed job (moved aside, not retried). */
  private sessionOf(job: ConsumedJob): string {
    const parsed = TurnJobSchema.safeParse(job.data);
    if (!parsed.success) {
      this.logger.warn(
        { job: job.id, data: JSON.stringify(job.data)?.slice(0, 200) },
        'malformed turn job moved aside',
      );
      throw new AppError('INVALID_MESSAGE', `malformed turn job ${job.id}`);
    }
    return parsed.data.sessionKey;
  }

  /** Runs the turn, records its figures and queues its reply or its failure; false when a later attempt answers instead. */
  private async runAndAnswer(
    turn: TakenTurn,
    signal: AbortSignal,
    live: LivePublisher | undefined,
  ): Promise<boolean> {
    const recordIteration = this.recorder.onIteration(turn.id, turn.sessionKey, turn.since.toISOString());
    const result = await this.runTurn(
      turn.batch,
      signal,
      this.turnIo(turn, live, recordIteration),
      turn.span,
    );
    return this.answerTurn(turn, result, live);
  }

  /** Runs `turn`, catching its failure for {@link answerTurn}. */
  private async settle(
    turn: () => Promise<TurnResult>,
  ): Promise<{ ok: true; value: TurnResult } | { ok: false; error: unknown }> {
    try {
      return { ok: true, value: await turn() };
    } catch (error) {
      return { ok: false, error };
    }
  }

  /**
   * Records the turn's figures and queues its reply, its question or its failure. Returns false,
   * queuing nothing, when a later attempt of the turn has claimed it (turn-fence.ts): that one answers.
   */
  private async answerTurn(
    turn: TakenTurn,
    result: { ok: true; value: TurnResult } | { ok: false; error: unknown },
    live: LivePublisher | undefined,
  ): Promise<boolean> {
    // Sent first on the shared connection, so Redis records the figures before the reply is queued;
    // awaited after, so the reply does not wait for a round trip of its own.
    const timeline = {
      receivedAt: Number.isFinite(turn.receivedAt) ? turn.receivedAt : turn.since.getTime(),
      startedAt: turn.since.getTime(),
      ...(turn.askedAt === undefined ? {} : { askedAt: turn.askedAt }),
    };
    const recorded = this.recorder.finished(
      turn.id,
      result.ok
        ? { metrics: result.value.metrics, timeline }
        : {
            error: describeError(result.error),
            wallMs: Date.now() - turn.since.getTime(),
            session: turn.sessionKey,
            timeline,
          },
    );
    turn.recorded = recorded;
    this.traceResult(turn, result);
    if (!result.ok) await recorded;
    // The last snapshot goes out before the reply that completes it. `live` names the preview to
    // finish even when this attempt showed none: an earlier attempt (before a crash) may have.
    await live?.close();
    const completes = live ? { live: turn.id } : {};
    // Queued under the write lease, so no later attempt claims the turn in between (turn-fence.ts).
    let afterQueued: (() => Promise<void>) | undefined;
    const hold = await this.bus.turnFence.holding(turn.sessionKey, turn.attempt, async () => {
      afterQueued = await this.queueAnswer(turn, result, live, completes);
    });
    if (hold === 'taken') {
      turn.log.warn("another attempt of this turn took it over (this one's lock was lost); it answers");
      await recorded;
      return false;
    }
    if (hold === 'retaken')
      turn.log.warn("this turn's claim was gone (a failover?); taken again, it answers");
    await afterQueued?.();
    await recorded;
    return true;
  }

  /**
   * Queues the turn's reply, its question or its failure (with the stored answers of an earlier
   * attempt first); returns what follows the queued reply (speaking it), which needs no lease.
   */
  private async queueAnswer(
    turn: TakenTurn,
    result: { ok: true; value: TurnResult } | { ok: false; error: unknown },
    live: LivePublisher | undefined,
    completes: { live?: string },
  ): Promise<(() => Promise<void>) | undefined> {
    if (!result.ok) {
      await this.answerFailure(turn, result.error, completes);
      return undefined;
    }
    await this.resendStored(turn, result.value);
    if (result.value.parked) {
      await this.ask(turn, result.value, completes);
      return undefined;
    }
    if (result.value.reply === undefined) return undefined;
    const content = shownReply(result.value, live);
    const { answersFrom } = result.value;
    // Messages an earlier attempt answered (`stored`) keep that answer's id; this one is named
    // by the first message it answers, so a redo with new messages is not mistaken for the old reply.
    const replyTurn = answersFrom ? turnId(turn.sessionKey, answersFrom) : turn.id;
    await this.bus.publishOutbound({
      ...result.value.target,
      id: replyId(replyTurn),
      content,
      kind: 'reply',
      metadata: {
        ...this.routed(turn, answeredBy(turn.batch, result.value)),
        usage: usageOf(result.value.metrics),
        // A limit reached: the API answers 429 with the line.
        ...(result.value.metrics.outcome === 'budget' ? { budget: true } : {}),
      },
      ...completes,
    });
    const { voice } = this;
    if (!voice) return undefined;
    // Spoken only once the text is final and queued; a failure leaves the text alone.
    const spoken = {
      outcome: result.value.metrics.outcome,
      turn: replyTurn,
      sessionKey: turn.sessionKey,
      batch: turn.batch,
      target: result.value.target,
      content,
      metadata: routingMetadata(turn.batch),
    };
    return async () => {
      await voice.afterReply(spoken);
    };
  }

  /**
   * Parks the turn on its question: stores it (with the time-out), then sends it to the chat with
   * its buttons. A question stored but not sent (a crash between) is sent by the next turn job.
   */
  private async ask(turn: TakenTurn, result: TurnResult, completes: { live?: string }): Promise<void> {
    const pending: PendingApproval = {
      ...pendingApprovalOf(turn.head, turn.sessionKey, result, {
        timeoutMs: this.approval?.timeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS,
      }),
      ...(turn.span.context ? { trace: turn.span.context } : {}),
    };
    await this.bus.parkApproval(pending);
    turn.log.info(
      { approval: pending.code, tool: pending.call.name, tainted: pending.tainted },
      'turn parked: approval asked',
    );
    await this.sendQuestion(pending, this.routed(turn), completes);
  }

  /** Sends a stored question to its chat (the same id however often: it shows once). */
  private async sendQuestion(
    pending: PendingApproval,
    metadata: Record<string, unknown>,
    completes: { live?: string } = {},
  ): Promise<void> {
    await this.bus.publishOutbound(questionMessage(pending, metadata, completes));
    await this.bus.approvals.markAsked(pending.sessionKey, pending.code);
  }

  /**
   * The session's parked turn, if any: still waiting → false (its chat's messages wait; a
   * question not yet sent is sent); settled → the turn goes on here, then true (the mailbox next).
   */
  private async settleParked(job: ConsumedJob, sessionKey: string, log: Logger): Promise<boolean> {
    let pending = await this.bus.approvals.get(sessionKey);
    if (!pending) return true;
    if (pending.state === 'waiting' && Date.parse(pending.expiresAt) <= Date.now()) {
      await this.bus.expireApproval(sessionKey, pending.code);
      pending = await this.bus.approvals.get(sessionKey);
      if (!pending) return true;
    }
    if (pending.state === 'waiting') {
      if (!pending.asked) await this.sendQuestion(pending, {});
      log.debug({ approval: pending.code }, 'approval still waiting: messages wait');
      return false;
    }
    const decision = await decisionOf(this.bus.approvals, pending);
    log.info(
      { approval: pending.code, decision, decidedBy: pending.decidedBy },
      'approval settled: turn goes on',
    );
    await this.resume(job, pending, decision, log);
    return true;
  }

  /** Runs the rest of a parked turn and answers (or asks the next question), then removes the settled one. */
  private async resume(job: ConsumedJob, pending: PendingApproval, decision: ParkedDecision, log: Logger) {
    const { sessionKey } = pending;
    const request = pending.parked.request;
    const head = resumedHead(pending);
    const id = turnId(sessionKey, head.id);
    const askedAt = Date.parse(pending.askedAt);
    const span = this.turnSpan(id, request.channel, traceOf({ trace: pending.trace }), []);
    this.approvalSpan(span, askedAt, decision);
    const turn: TakenTurn = {
      span,
      receivedAt: askedAt,
      askedAt,
      job,
      sessionKey,
      log,
      mailbox: this.bus.mailbox(sessionKey),
      batch: [],
      taken: [],
      head,
      id,
      attempt: randomUUID(),
      origin: {
        channel: request.channel,
        chatId: request.chatId,
        ...(request.threadId ? { threadId: request.threadId } : {}),
      },
      since: new Date(),
    };
    const controller = new AbortController();
    this.running.set(sessionKey, controller);
    await Promise.all([
      this.activity(turn.origin, true, log),
      this.recorder.started(turn.id, sessionKey, turn.since),
      this.claim(sessionKey, turn.attempt, log),
    ]);
    try {
      const recordIteration = this.recorder.onIteration(turn.id, sessionKey, turn.since.toISOString());
      const io = this.turnIo(turn, undefined, recordIteration);
      const result = await this.settle(() =>
        this.agent.resumeTurn!(pending, decision, {
          signal: controller.signal,
          drainPending: io.drain,
          answering: io.answering,
          outbound: { publish: io.publish },
          onIteration: io.onIteration,
          approvals: this.turnApprovals(),
          ...(span.context ? { trace: span.context } : {}),
        }),
      );
      const answered = await this.answerTurn(turn, result, undefined);
      await this.bus.approvals.finish(sessionKey, pending.code);
      if (answered) await turn.mailbox.trim(turn.taken);
    } finally {
      await this.endTurn(turn, undefined);
    }
  }

  /** Claims the turn for this attempt before the session is read (turn-fence.ts), saying once if it waits. */
  private claim(sessionKey: string, attempt: string, log: Logger): Promise<void> {
    let said = false;
    return this.bus.turnFence.claim(sessionKey, attempt, (leftMs) => {
      if (!said) log.info({ leftMs }, 'another attempt of this turn is writing: the claim waits');
      said = true;
    });
  }

  /** What a bus turn asks with: the policy, and the chat's rules in Redis; questions park the turn. */
  private turnApprovals(): TurnApprovals | undefined {
    const { approval } = this;
    if (!approval) return undefined;
    return {
      mode: approval.mode,
      execNetwork: approval.execNetwork,
      rules: (chatKey) => this.bus.approvals.rules(chatKey),
    };
  }

  /** What the running turn may do: show progress, take later messages, send messages. */
  private turnIo(turn: TakenTurn, live: LivePublisher | undefined, recordIteration: (n: number) => void) {
    return {
      onIteration: (n: number) => {
        recordIteration(n);
        live?.iteration(n);
      },
      ...(live
        ? { onDelta: (text: string) => live.delta(text), onTool: (call: ToolCall) => live.tool(call) }
        : {}),
      answering: async (write: () => Promise<void>) =>
        (await this.bus.turnFence.holding(turn.sessionKey, turn.attempt, write)) !== 'taken',
      drain: async () => {
        const more = await turn.mailbox.read(turn.taken.length);
        turn.taken.push(...more.entries);
        turn.batch.push(...more.messages);
        return more.messages;
      },
      // The tool context gave each message its id (bus/outbound-ids.ts); the worker adds the routing.
      publish: (message: OutboundMessageInput) =>
        this.bus.publishOutbound({
          ...message,
          metadata: { ...this.routed(turn), ...message.metadata },
        }),
    };
  }

  /**
   * A failed turn: rethrown while a transient failure has attempts left (the job
   * retries), else the chat gets the failure reply.
   */
  private async answerFailure(turn: TakenTurn, err: unknown, completes: { live?: string }): Promise<void> {
    const { job, log } = turn;
    if (isTransient(err) && job.attemptsMade + 1 < job.maxAttempts) {
      log.warn({ err: describeError(err), attempt: job.attemptsMade + 1 }, 'turn failed; will retry');
      throw err;
    }
    log.error({ err: describeError(err) }, 'turn failed');
    await this.bus.publishOutbound({
      ...turn.origin,
      replyTo: turn.head.platformMessageId,
      id: errorId(turn.id),
      content: failureReply(err),
      kind: 'error',
      metadata: this.routed(turn),
      ...completes,
    });
  }

  /** After the turn, whatever happened: frees the session, closes the live preview, clears the marker and typing. */
  private async endTurn(turn: TakenTurn, live: LivePublisher | undefined): Promise<void> {
    const { sessionKey, log } = turn;
    this.running.delete(sessionKey);
    turn.span.end();
    await live?.close();
    const clearRunning = async () => {
      // The figures' script removed the record already, unless it did not run (or the turn ended before).
      if (await turn.recorded?.catch(() => false)) return;
      await this.recorder
        .clear(sessionKey)
        .catch((err: unknown) => log.warn({ err: describeError(err) }, 'could not clear the running marker'));
    };
    await Promise.all([clearRunning(), this.activity(turn.origin, false, log)]);
  }

  /** The routing of the turn's messages (or of `messages`, some of them), with the turn's span as the parent of what it sends. */
  private routed(turn: TakenTurn, messages: InboundMessage[] = turn.batch): Record<string, unknown> {
    return withTrace(routingMetadata(messages), turn.span);
  }

  /**
   * A redone turn's answers stored by an earlier attempt, queued again in order, each under the
   * reply id its first message names (the earlier attempt's id when it was the head: BullMQ drops
   * what it holds already) and routed to the messages it answers.
   */
  private async resendStored(turn: TakenTurn, result: TurnResult): Promise<void> {
    for (const answer of result.stored ?? []) {
      const ids = new Set(answer.ids);
      await this.bus.publishOutbound({
        ...result.target,
        id: replyId(turnId(turn.sessionKey, answer.ids[0]!)),
        content: answer.content,
        kind: 'reply',
        metadata: this.routed(
          turn,
          turn.batch.filter((m) => ids.has(m.id)),
        ),
      });
    }
  }

  /**
   * The turn's span: a child of the head message's publish (the bus hop), linked to the other
   * messages of the batch, which started traces of their own.
   */
  private turnSpan(
    id: string,
    channel: string,
    parent: TraceParent | undefined,
    batch: readonly InboundMessage[],
  ): TraceSpan {
    const links = batch.slice(1).flatMap((m) => traceOf(m.metadata) ?? []);
    return this.tracing.start('process inbound', {
      kind: 'consumer',
      parent,
      links,
      attributes: {
        'messaging.system': 'bullmq',
        'messaging.operation.type': 'process',
        'messaging.destination.name': INBOUND_QUEUE,
        'messaging.batch.message_count': Math.max(1, batch.length),
        'magpie.channel': channel,
        'magpie.turn.id': id,
      },
    });
  }

  /** The wait for a person's answer, from the question to this resumption. */
  private approvalSpan(turn: TraceSpan, askedAt: number, decision: ParkedDecision): void {
    if (!Number.isFinite(askedAt)) return;
    this.tracing
      .start('approval wait', {
        parent: turn.context,
        startTime: askedAt,
        attributes: { 'magpie.approval.decision': decision },
      })
      .end();
  }

  /** The turn's figures on its span, and its model and tool calls as child spans. */
  private traceResult(
    turn: TakenTurn,
    result: { ok: true; value: TurnResult } | { ok: false; error: unknown },
  ): void {
    if (!result.ok) {
      turn.span.fail(result.error instanceof AppError ? result.error.code : 'error');
      return;
    }
    const { metrics } = result.value;
    turn.span.set({
      'magpie.turn.outcome': metrics.outcome,
      'magpie.turn.llm_calls': metrics.llmCalls,
      'magpie.turn.tool_calls': metrics.toolCalls.length,
    });
    stepSpans(this.tracing, turn.span, turn.since.getTime(), metrics.steps ?? []);
  }

  private async runTurn(
    batch: InboundMessage[],
    signal: AbortSignal,
    io: {
      drain: () => Promise<InboundMessage[]>;
      publish: (m: OutboundMessageInput) => Promise<void>;
    } & Pick<TurnOptions, 'onIteration' | 'onDelta' | 'onTool' | 'answering'>,
    span: TraceSpan,
  ): Promise<{ ok: true; value: TurnResult } | { ok: false; error: unknown }> {
    // A scheduled agent task with MAGPIE_APPROVAL_UNATTENDED=deny: nobody is asked, a risky step is not run.
    const approvals =
      batch.some(isScheduled) && this.approval?.unattended === 'deny'
        ? unattendedApprovals({
            ...this.approval,
            onDenied: (summary) =>
              this.logger.warn({ summary }, 'scheduled task call not approved: unattended=deny'),
          })
        : this.turnApprovals();
    return this.settle(() =>
      this.agent.processMessage([...batch], {
        signal,
        drainPending: io.drain,
        answering: io.answering,
        outbound: { publish: io.publish },
        ...(io.onIteration ? { onIteration: io.onIteration } : {}),
        ...(io.onDelta ? { onDelta: io.onDelta } : {}),
        ...(io.onTool ? { onTool: io.onTool } : {}),
        ...(approvals ? { approvals } : {}),
        ...(span.context ? { trace: span.context } : {}),
      }),
    );
  }

  /** The turn's live snapshots, when its chat's channel streams (user turns only: not helper results). */
  private livePublisher(
    head: InboundMessage,
    turn: string,
    batch: InboundMessage[],
    log: Logger,
  ): LivePublisher | undefined {
    if (isInternalChannel(head.channel) || !this.streams(head.channel)) return undefined;
    return new LivePublisher({
      base: {
        turn,
        channel: head.channel,
        chatId: head.chatId,
        ...(head.threadId ? { threadId: head.threadId } : {}),
        ...(head.platformMessageId ? { replyTo: head.platformMessageId } : {}),
        metadata: routingMetadata(batch),
      },
      publish: (update) => this.bus.publishLive(update),
      logger: log,
      ...this.livePace,
    });
  }

  private async activity(
    origin: { channel: string; chatId: string; threadId?: string },
    active: boolean,
    log: Logger,
  ): Promise<void> {
    try {
      await this.bus.publishActivity(origin.channel, {
        chatId: origin.chatId,
        threadId: origin.threadId,
        active,
      });
    } catch (err) {
      log.debug({ err: describeError(err) }, 'activity not published');
    }
  }
}

/** A turn job while it runs: the messages it took from the session's mailbox and where they came from. */
interface TakenTurn {
  /** The turn's span (inert when tracing is off). */
  span: TraceSpan;
  /** When the head message was received (ms since the epoch; a resumed turn: when its question was asked). */
  receivedAt: number;
  /** A resumed turn: when its question was asked. */
  askedAt?: number;
  job: ConsumedJob;
  sessionKey: string;
  log: Logger;
  mailbox: Pick<Mailbox, 'read' | 'trim'>;
  /** The messages of the turn: the first read, then what `drainPending` added. */
  batch: InboundMessage[];
  /** Mailbox entries read so far, as stored (removed once the answer is queued). */
  taken: string[];
  head: InboundMessage;
  /** The turn id (session + head message id). */
  id: string;
  /** This attempt's claim on the turn (turn-fence.ts). */
  attempt: string;
  origin: { channel: string; chatId: string; threadId?: string };
  since: Date;
  /** The turn's figures being recorded; true once that script ran, which removed the running record too. */
  recorded?: Promise<boolean>;
}

/**
 * The chat a turn's typing and error reply go to: for a `system` message (a
 * helper's result) the chat named in its `metadata.origin`.
 */
function chatOf(head: InboundMessage): { channel: string; chatId: string; threadId?: string } {
  const origin = isInternalChannel(head.channel) ? originOf(head) : undefined;
  if (origin) return { channel: origin.channel, chatId: origin.chatId, threadId: origin.threadId };
  return { channel: head.channel, chatId: head.chatId, threadId: head.threadId };
}

/** The turn's token counts, carried on its reply (the API reports them to its client). */
function usageOf(metrics: TurnResult['metrics']): {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
} {
  return {
    promptTokens: metrics.promptTokens,
    completionTokens: metrics.completionTokens,
    cachedTokens: metrics.cachedTokens ?? 0,
  };
}

/**
 * The reply as the chat shows it: a turn stopped while its answer was showing keeps the text
 * written so far above the stop notice (the session stores the notice only, as without streaming).
 */
function shownReply(result: TurnResult, live: LivePublisher | undefined): string {
  const reply = result.reply ?? '';
  if (result.metrics.outcome !== 'cancelled' || !live || live.published === 0 || live.text.trim() === '')
    return reply;
  return `${live.text.trimEnd()}\n\n${reply}`;
}

/** The messages of `batch` the turn's reply answers: all but those an earlier attempt answered. */
function answeredBy(batch: InboundMessage[], result: TurnResult): InboundMessage[] {
  if (!result.stored?.length) return batch;
  const earlier = new Set(result.stored.flatMap((a) => a.ids));
  const rest = batch.filter((m) => !earlier.has(m.id));
  return rest.length > 0 ? rest : batch;
}

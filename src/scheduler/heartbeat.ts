/**
 * One heartbeat tick: checks active hours and HEARTBEAT.md, takes the
 * heartbeat lock (no two heartbeats overlap, across all workers), runs the
 * agent's heartbeat turn with the tasks in the prompt, drops `HEARTBEAT_OK`
 * replies and delivers anything else to the last active chat.
 *
 * Delivery and the chat's own turns: the heartbeat's reply is already the
 * agent's words, so it is not queued as an inbound message (that would run a
 * second turn). Instead it waits, bounded, until that chat has no running
 * turn (the bus's running-turn marker), then goes out on the chat's outbound
 * queue under the id `hb-<job id>`, so a redone tick never posts twice.
 */

import type { StateStore } from '../agent/ports.js';
import { unattendedApprovals } from '../approvals/unattended.js';
import type { UnattendedBudget } from '../budget/ports.js';
import { schedulerKeys } from '../bus/keys.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../log/index.js';
import { sessionKeyOf } from '../messages/messages.js';
import { formatInZone } from '../time/schedule.js';
import { isWithinActiveHours, parseActiveHours } from './active-hours.js';
import { readHeartbeatTasks } from './heartbeat-file.js';
import { HEARTBEAT_OK, isHeartbeatOk } from './heartbeat-ok.js';
import type { HeartbeatAgent, SchedulerBus } from './ports.js';

/** The session heartbeat turns run in (the agent's heartbeatRequest). */
const HEARTBEAT_SESSION = 'heartbeat';

/** What one tick did (logged, and returned for tests). */
export type HeartbeatOutcome =
  | 'skipped-inactive'
  | 'skipped-missing'
  | 'skipped-empty'
  | 'skipped-overlap'
  | 'skipped-budget'
  | 'ok'
  | 'empty-reply'
  | 'no-chat'
  | 'delivered';

export interface HeartbeatRunnerOptions {
  config: Config;
  bus: SchedulerBus;
  agent: HeartbeatAgent;
  state: StateStore;
  logger: Logger;
  /** The clock. @defaultValue Date.now */
  now?: () => number;
  /** Asked before each tick: at a spending limit the tick is skipped (logged, counted). @defaultValue none */
  budget?: UnattendedBudget;
  /** Lifetime of the heartbeat lock; renewed every third of it while a tick runs. @defaultValue 60000 */
  lockTtlMs?: number;
  /** Longest wait for the last chat's running turn to end before delivering anyway. @defaultValue 300000 */
  busyWaitMs?: number;
  /** How often the running-turn marker is checked while waiting. @defaultValue 500 */
  busyPollMs?: number;
}

/**
 * The prompt of a heartbeat turn: the time, the tasks themselves and the
 * instruction to answer HEARTBEAT_OK when nothing needs the user.
 */
export function buildHeartbeatPrompt(tasks: string, now: number, tz: string): string {
  return [
    `[heartbeat] It is ${formatInZone(now, tz)}. This is your periodic check, not a message from the user.`,
    'Go through the tasks below from HEARTBEAT.md and do what they ask, using your tools where needed.',
    `If nothing needs the user's attention, answer with exactly ${HEARTBEAT_OK} and nothing else.`,
    'Otherwise answer with the message to send to the user (it goes to their last active chat); do not include ' +
      `${HEARTBEAT_OK} then.`,
    '',
    '--- HEARTBEAT.md ---',
    tasks,
    '--- end of HEARTBEAT.md ---',
  ].join('\n');
}

/** Runs heartbeat ticks; one instance per worker process. */
export class HeartbeatRunner {
  private readonly options: HeartbeatRunnerOptions;
  private readonly now: () => number;
  private readonly lockTtlMs: number;
  private readonly busyWaitMs: number;
  private readonly busyPollMs: number;
  private readonly lockKey: string;

  constructor(options: HeartbeatRunnerOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.lockTtlMs = options.lockTtlMs ?? 60_000;
    this.busyWaitMs = options.busyWaitMs ?? 300_000;
    this.busyPollMs = options.busyPollMs ?? 500;
    this.lockKey = schedulerKeys.heartbeatLock(options.bus.prefix);
  }

  /** Runs the tick of job `jobId`. Throws only on infrastructure errors (the job retries). */
  async run(jobId: string): Promise<HeartbeatOutcome> {
    const { config, logger } = this.options;
    const log = logger.child({ job: jobId, session: 'heartbeat' });
    const now = this.now();
    const hours = config.heartbeat.activeHours ? parseActiveHours(config.heartbeat.activeHours) : undefined;
    if (!isWithinActiveHours(hours, now, config.timezone)) {
      log.info(
        { activeHours: hours?.text, timezone: config.timezone },
        'heartbeat skipped: outside active hours',
      );
      return 'skipped-inactive';
    }
    const found = await readHeartbeatTasks(config.workspace);
    if (found.status !== 'tasks') {
      log.info(
        { file: found.file },
        found.status === 'missing'
          ? 'heartbeat skipped: HEARTBEAT.md is missing'
          : 'heartbeat skipped: HEARTBEAT.md holds no tasks',
      );
      return found.status === 'missing' ? 'skipped-missing' : 'skipped-empty';
    }
    if (await this.options.budget?.blocked(HEARTBEAT_SESSION)) {
      log.warn('heartbeat skipped: a spending limit is reached');
      await this.options.budget?.skipped('heartbeat');
      return 'skipped-budget';
    }
    const lock = await this.options.bus.markers.lock(this.lockKey, this.lockTtlMs);
    if (!lock) {
      log.info('heartbeat skipped: the previous heartbeat is still running');
      return 'skipped-overlap';
    }
    const renew = setInterval(
      () => {
        lock.renew().catch((err: unknown) => log.warn({ err }, 'renewing the heartbeat lock failed'));
      },
      Math.max(100, Math.floor(this.lockTtlMs / 3)),
    );
    try {
      return await this.turn(jobId, buildHeartbeatPrompt(found.text, now, config.timezone), log);
    } finally {
      clearInterval(renew);
      await lock.release().catch((err: unknown) => log.warn({ err }, 'releasing the heartbeat lock failed'));
    }
  }

  /** Tells the owner's last chat which heartbeat steps were not run for want of an approval. */
  private async tellDenied(jobId: string, denied: string[], log: Logger): Promise<void> {
    const target = await this.options.state.getLastChannel();
    if (!target) return;
    const steps = denied.map((s) => `- ${s}`).join('\n');
    await this.options.bus.publishOutbound({
      id: `hb-denied-${jobId.replace(/:/g, '-')}`,
      channel: target.channel,
      chatId: target.chatId,
      ...(target.threadId ? { threadId: target.threadId } : {}),
      content:
        `During the heartbeat magpie wanted to:\n${steps}\nNobody was here to approve, so it was not done. ` +
        'Ask for it here if you want it (magpie will ask first).',
      kind: 'message',
      metadata: { heartbeat: jobId },
    });
    log.info({ steps: denied.length }, 'heartbeat: the owner was told of the steps not approved');
  }

  private async turn(jobId: string, prompt: string, log: Logger): Promise<HeartbeatOutcome> {
    // Nobody is present: a call that would ask is denied; with MAGPIE_APPROVAL_UNATTENDED=ask the
    // owner's last chat is told what was not done (a heartbeat turn cannot wait for an answer).
    const denied: string[] = [];
    const approvals = unattendedApprovals({
      mode: this.options.config.approval.mode,
      execNetwork: this.options.config.tools.execNetwork,
      onDenied: (summary) => {
        denied.push(summary);
        log.warn({ summary }, 'heartbeat call not approved: nobody to ask');
      },
    });
    const result = await this.options.agent.processHeartbeat(prompt, approvals ? { approvals } : {});
    if (denied.length > 0 && this.options.config.approval.unattended === 'ask')
      await this.tellDenied(jobId, denied, log);
    if (result.metrics.outcome === 'budget') {
      log.warn('heartbeat stopped at a spending limit; nothing is delivered');
      await this.options.budget?.skipped('heartbeat');
      return 'skipped-budget';
    }
    const reply = result.reply?.trim() ?? '';
    if (reply === '') {
      log.info('heartbeat done: no reply');
      return 'empty-reply';
    }
    if (isHeartbeatOk(reply)) {
      log.info('heartbeat done: nothing needs attention (HEARTBEAT_OK)');
      return 'ok';
    }
    const target = await this.options.state.getLastChannel();
    if (!target) {
      log.warn({ chars: reply.length }, 'heartbeat reply not delivered: no chat has been active yet');
      return 'no-chat';
    }
    await this.waitForIdle(sessionKeyOf(target), log);
    await this.options.bus.publishOutbound({
      id: `hb-${jobId.replace(/:/g, '-')}`,
      channel: target.channel,
      chatId: target.chatId,
      ...(target.threadId ? { threadId: target.threadId } : {}),
      content: reply,
      kind: 'message',
      metadata: { heartbeat: jobId },
    });
    log.info(
      { channel: target.channel, chatId: target.chatId },
      'heartbeat reply delivered to the last active chat',
    );
    return 'delivered';
  }

  /** Waits (bounded) until the chat's session has no running turn. */
  private async waitForIdle(sessionKey: string, log: Logger): Promise<void> {
    const deadline = this.now() + this.busyWaitMs;
    let logged = false;
    while (await this.options.bus.runningTurns.isRunning(sessionKey)) {
      if (this.now() >= deadline) {
        log.warn(
          { sessionKey, waitedMs: this.busyWaitMs },
          'the chat is still mid-turn; delivering the heartbeat anyway',
        );
        return;
      }
      if (!logged) {
        log.info({ sessionKey }, 'the last chat is mid-turn; the heartbeat reply waits for it to finish');
        logged = true;
      }
      await new Promise((resolve) => setTimeout(resolve, this.busyPollMs));
    }
  }
}

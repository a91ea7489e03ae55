/**
 * What the scheduler needs from the rest of magpie: the part of the bus it
 * uses, and the agent's heartbeat entry point. Narrow, so tests can build them.
 */
import type { AgentRunner } from '../agent/types.js';
import type { Bus } from '../bus/bus.js';

/** The bus as the scheduler uses it (the real Bus satisfies it). */
export type SchedulerBus = Pick<
  Bus,
  'prefix' | 'markers' | 'runningTurns' | 'createConsumerConnection' | 'publishInbound' | 'publishOutbound'
>;

/** The agent as the heartbeat uses it. */
export type HeartbeatAgent = Pick<AgentRunner, 'processHeartbeat'>;

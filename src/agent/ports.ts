/** Ports the agent core depends on besides the provider, tools and sessions. */
import type { OutboundMessageInput } from '../messages/messages.js';

/** Where replies and mid-turn messages go: the bus in the daemon, stdout for `magpie agent`. */
export interface OutboundSink {
  publish(message: OutboundMessageInput): Promise<void>;
}

/** Small shared state: the last user-facing chat (for heartbeat replies). */
export interface StateStore {
  setLastChannel(channel: string, chatId: string, threadId?: string): Promise<void>;
  getLastChannel(): Promise<{ channel: string; chatId: string; threadId?: string } | undefined>;
}

/**
 * Each chat's model (`/model`), kept across restarts: Redis in the daemon (every
 * worker sees it), a file in the state folder for `magpie agent`.
 */
export interface ModelChoiceStore {
  /** The id of the model the chat picked, or undefined for the default. */
  get(sessionKey: string): Promise<string | undefined>;
  /** Picks `model` (an id) for the chat; undefined goes back to the default. */
  set(sessionKey: string, model: string | undefined): Promise<void>;
}

/** What /usage shows: the chat's and everything's spend and the limits (src/budget in the daemon). */
export interface UsageView {
  usageText(sessionKey: string): Promise<string>;
}

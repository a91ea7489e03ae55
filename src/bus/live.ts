/**
 * Live replies on the bus: while a turn runs, the worker publishes snapshots
 * (`LiveUpdate`, `src/messages/live-update.ts`) of the answer being written on
 * `<prefix>:live:<channel>` (pub/sub, coalesced by the worker); the gateway
 * owning that channel shows them.
 */
import type { Redis } from 'ioredis';
import { type LiveUpdate, LiveUpdateSchema } from '../messages/live-update.js';
import { channelSubscription } from './json-topic.js';
import { keys } from './keys.js';

export async function publishLive(redis: Redis, prefix: string, update: LiveUpdate): Promise<void> {
  await redis.publish(keys.live(prefix, update.channel), JSON.stringify(update));
}

/** Subscribes to a channel's live snapshots; malformed ones are logged and skipped. */
export const subscribeLive = channelSubscription(keys.live, LiveUpdateSchema, 'live update');

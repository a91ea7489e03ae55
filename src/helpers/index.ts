/** The worker role's helper parts, loaded lazily by main.ts: the queue, the Redis tracker and the worker. */
export { HELPERS_QUEUE, HelpersQueue, helperKeys } from '../bus/helpers-queue.js';
export { RedisHelperTracker } from './tracker.js';
export { HelperWorker, helperResultId } from './worker.js';

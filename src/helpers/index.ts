/** The worker role's helper parts, loaded lazily by main.ts: the queue, the Redis tracker and the worker. */

export { RedisHelperTracker } from '../bus/helper-records.js';
export { HELPERS_QUEUE, HelpersQueue } from '../bus/helpers-queue.js';
export { HelperWorker, helperResultId } from './worker.js';

/** Vitest global set-up: one real redis-server for the whole run; tests use unique prefixes. */
import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { startRedis } from './redis-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const redis = await startRedis();
  project.provide('redisUrl', redis.url);
  return async () => {
    await redis.stop();
  };
}

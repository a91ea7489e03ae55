#!/usr/bin/env node
/**
 * The program's entry and the top of the import graph (nothing imports this
 * file): runs the `magpie` command line, handing it the one function that
 * builds a role (`start`, `gateway`, `worker`) from a Config and runs it until
 * SIGINT/SIGTERM. The roles' parts (src/app/roles.ts, and through it the bus,
 * channels and worker) load only when a role runs, so `magpie agent` never
 * loads bullmq, ioredis or a channel's SDK.
 */
import type { RoleOptions } from './app/roles.js';
import { runCli } from './cli/run.js';

/**
 * Builds and runs a role until SIGINT/SIGTERM, then shuts it down in order
 * (intake → workers → queues → Redis) and resolves 0. A second signal exits at once.
 */
async function runRole(options: RoleOptions): Promise<number> {
  const { startRole } = await import('./app/roles.js');
  const running = await startRole(options);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  options.logger.info({ signal }, 'shutting down: finishing running turns');
  const force = () => {
    options.logger.warn('second signal: exiting now');
    process.exit(1);
  };
  process.once('SIGINT', force);
  process.once('SIGTERM', force);
  await running.stop();
  // Everything is closed; a handle a library still holds (seen after failovers of a Redis
  // Cluster: "magpie stopped", then no exit) must not keep the stopped process alive.
  setTimeout(() => {
    // What still holds the event loop (e.g. "Timeout", "TCPSocketWrap"), for whoever looks into it.
    options.logger.warn(
      { resources: process.getActiveResourcesInfo() },
      'stopped, but something kept the process alive: exiting',
    );
    process.exit(0);
  }, EXIT_GRACE_MS).unref();
  return 0;
}

/** How long a stopped daemon may take to exit by itself. */
const EXIT_GRACE_MS = 2_000;

runCli(process.argv.slice(2), { runRole });

/**
 * Starts a real, private redis-server on a free loopback port for tests.
 * Each test then isolates itself with a unique key/queue prefix.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface RedisHandle {
  url: string;
  port: number;
  dir: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** How long a server asked to stop may take before it is killed. */
const STOP_GRACE_MS = 3_000;

/**
 * Stops a Redis or Sentinel process: SIGTERM, then SIGKILL after {@link STOP_GRACE_MS}.
 * Bounded because Redis 7 keeps a master with lagging replicas alive up to its
 * `shutdown-timeout` (10 s), and a Sentinel busy with a failover may not answer
 * at once; a test's clean-up has no data to keep. A process already gone (killed
 * by a test) is left alone.
 */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGCONT'); // a process a test stopped cannot act on SIGTERM
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

/** Starts redis-server with AOF on; resolves once it accepts connections. */
export async function startRedis(
  options: {
    port?: number;
    dir?: string /** More `--name value` arguments (e.g. `--replicaof`). */;
    args?: string[];
  } = {},
): Promise<RedisHandle> {
  const port = options.port ?? (await freePort());
  const dir = options.dir ?? mkdtempSync(path.join(os.tmpdir(), 'magpie-redis-'));
  const child = spawn(
    'redis-server',
    [
      '--bind',
      '127.0.0.1',
      '--port',
      String(port),
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--save',
      '',
      '--maxmemory-policy',
      'noeviction',
      '--protected-mode',
      'yes',
      ...(options.args ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Ready to accept connections')) {
        child.stdout?.off('data', onData);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.once('error', (err) => reject(new Error(`redis-server could not start: ${err.message}`)));
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out.slice(-500)}`)));
  });
  child.stdout?.resume();
  child.stderr?.resume();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    process: child,
    async stop() {
      await stopProcess(child);
      if (!options.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

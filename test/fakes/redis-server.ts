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
  /**
   * SIGKILLs the server and keeps its port taken until {@link RedisHandle.stop} or
   * {@link RedisHandle.releasePort} (see {@link holdPort}): what a test that kills a master
   * calls, rather than `process.kill`.
   */
  kill(): Promise<void>;
  /** Gives a killed server's port back, for a test that starts a server on it again. */
  releasePort(): Promise<void>;
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

/**
 * Keeps `port` taken after its server died: a listener that resets every connection at once
 * (clients and Sentinels see a dead server, as with a refused one), until the returned function
 * is called. Without it, another test file running at the same time can be handed the freed port
 * by {@link freePort} and start its own redis-server there: an empty master at a dead master's
 * address. Clients that reconnect while the Sentinels still name that address then write there
 * (a job move meeting "Missing key" on it leaves the job locked on the real master until the lock
 * lapses, 30 s), and the Sentinels make that server a replica of theirs; seen as a chat whose
 * replies waited past a failover test's 20 s in one `.ci/run` of several.
 */
export async function holdPort(port: number): Promise<() => Promise<void>> {
  const holder = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    holder.once('error', reject);
    holder.listen(port, '127.0.0.1', () => resolve());
  });
  return () => new Promise<void>((resolve) => holder.close(() => resolve()));
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
  let release: (() => Promise<void>) | undefined;
  const releasePort = async () => {
    await release?.();
    release = undefined;
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    process: child,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }
      release ??= await holdPort(port);
    },
    releasePort,
    async stop() {
      await stopProcess(child);
      await releasePort();
      if (!options.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

// PM2 processes for magpie: the gateway once, the worker N times (MAGPIE_WORKERS, default 2).
// `pm2 start ecosystem.config.js` — PM2 7 loads this ESM file on Node >= 20.19 through the named
// export `apps` (a default export or module.exports would fail in this "type": "module" package).
// Set REDIS_URL (a shared Redis): the private redis-server is only started by `magpie start`.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(fileURLToPath(import.meta.url));
const workers = Number(process.env.MAGPIE_WORKERS ?? 2);

// A turn may take a while: SIGINT lets it finish (up to --shutdown-timeout, 60 s by default)
// before PM2 sends SIGKILL.
const killTimeout = 75_000;

export const apps = [
  {
    name: 'magpie-gateway',
    script: path.join(root, 'dist', 'cli', 'bin.js'),
    args: 'gateway',
    cwd: root,
    exec_mode: 'fork',
    instances: 1,
    kill_timeout: killTimeout,
    env: { NODE_ENV: 'production' },
  },
  {
    name: 'magpie-worker',
    script: path.join(root, 'dist', 'cli', 'bin.js'),
    args: 'worker',
    // A smaller young generation keeps a busy worker's RSS lower at about the same throughput
    // (docs/ARCHITECTURE.md: 4 MB took ~20% off Node 24's default; 2 MB a few MB more, 1 MB another
    // ~8 MB in bench:crowd, at up to ~1 ms more CPU a turn in a burst of 100 turns).
    node_args: '--max-semi-space-size=1',
    cwd: root,
    exec_mode: 'fork',
    instances: Number.isInteger(workers) && workers > 0 ? workers : 2,
    kill_timeout: killTimeout,
    // glibc gives each thread that allocates (V8's compiler and GC threads) a malloc arena of its
    // own, each keeping its peak, and raises its mmap threshold whenever a large block is freed, so
    // later large buffers stay in the heap: one arena and a fixed 128 KiB threshold keep a busy
    // worker's peak RSS ~6 MB lower (bench:crowd; docs/ARCHITECTURE.md).
    env: { NODE_ENV: 'production', MALLOC_ARENA_MAX: '1', MALLOC_MMAP_THRESHOLD_: '131072' },
  },
];

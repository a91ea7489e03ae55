/**
 * Chaos benchmark: 50 chats send continuously through the CLI channel while
 * workers, the gateway and Redis (AOF, appendfsync always) are SIGKILLed at
 * random moments and restarted; then every acknowledged message must have
 * been answered exactly once and in order. Prints progress on stderr and one
 * JSON object on stdout; exits 1 when a message was lost or answered twice, a
 * reply reached its chat after a later one, or a session file is broken or out
 * of order (`chaosFailures`).
 *
 *   npm run bench:chaos -- --minutes 5 [--chats 50] [--workers 3] [--logs DIR] [--sentinel | --cluster] [--min-replicas 1|2] [--short-locks] [--tls]
 *
 * `--sentinel`: Redis is a Sentinel-watched master with two replicas and three
 * Sentinels, magpie runs with MAGPIE_REDIS_MIN_REPLICAS=1 (see --min-replicas), and each Redis blow
 * kills the master (a replica takes over; the killed one comes back as a replica).
 * `--min-replicas 2`: every replica must confirm (MAGPIE_REDIS_MIN_REPLICAS=2), the setting that
 * also survives a failover promoting a replica which did not confirm; publishes are refused while
 * one replica is away (counted in `publishRetries`).
 * `--cluster`: Redis is a three-master Redis Cluster with two replicas per master, magpie runs on
 * REDIS_CLUSTER_NODES with MAGPIE_REDIS_MIN_REPLICAS=1 (see --min-replicas), and each Redis blow
 * kills the master serving magpie's slot (one of its replicas takes over; the killed one rejoins
 * as a replica).
 * `--tls`: every Redis (the server, or the Sentinels and their servers, or the Cluster's nodes) serves
 * TLS only and asks for client certificates, made for the run by a CA of its own; magpie runs with
 * a rediss:// REDIS_URL and REDIS_TLS_CA, REDIS_TLS_CERT, REDIS_TLS_KEY.
 * `--short-locks`: workers and gateways get 2 s locks (checked every second) instead of the
 * deployed 30 s; they lapse in every Redis restart, so live turns are taken over while they run.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chaosFailures } from './chaos-check.js';
import { runChaos } from './chaos-run.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '2' },
    chats: { type: 'string', default: '50' },
    workers: { type: 'string', default: '3' },
    logs: { type: 'string' },
    sentinel: { type: 'boolean', default: false },
    cluster: { type: 'boolean', default: false },
    'min-replicas': { type: 'string', default: '1' },
    'short-locks': { type: 'boolean', default: false },
    tls: { type: 'boolean', default: false },
  },
});
const minutes = Number(values.minutes);
const minReplicas = Number(values['min-replicas']);
if (!(minReplicas === 1 || minReplicas === 2)) {
  console.error(
    `--min-replicas must be 1 or 2 (the Sentinel group has two replicas), not ${JSON.stringify(values['min-replicas'])}`,
  );
  process.exit(2);
}
if (values.sentinel && values.cluster) {
  console.error('--sentinel and --cluster are two ways to run Redis: pick one');
  process.exit(2);
}
if (!(minutes > 0)) {
  console.error(`--minutes must be a positive number, not ${JSON.stringify(values.minutes)}`);
  process.exit(2);
}

execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'ignore' });
// The daemons' state folders (magpie's own data) go under a temporary XDG_STATE_HOME, as in the tests.
process.env.XDG_STATE_HOME = mkdtempSync(path.join(os.tmpdir(), 'magpie-bench-state-'));
const report = await runChaos({
  durationMs: minutes * 60_000,
  chats: Number(values.chats),
  workers: Number(values.workers),
  progress: (line) => console.error(`[chaos] ${line}`),
  ...(values.logs ? { logsDir: values.logs } : {}),
  sentinel: values.sentinel,
  cluster: values.cluster,
  minReplicas,
  shortLocks: values['short-locks'],
  tls: values.tls,
});
console.log(JSON.stringify(report, null, 2));
process.exit(chaosFailures(report).length === 0 ? 0 : 1);

/**
 * A second machine, simulated: a network namespace of its own joined to this
 * one by a veth pair on a private /30 (10.213.x.y), so a process started in it
 * reaches this machine only at the host side's address, as another host
 * would. Needs root and iproute2 (`ip`); there is no fallback: a machine
 * where `ip netns add` is refused fails with a line saying so.
 *
 * Names carry the creating process's pid (`magpie-nt-<pid>`, `mpnt<pid>h`),
 * so leftovers of a run that died are recognised and removed by the next.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import net from 'node:net';
import { alive } from './process.js';

export interface Netns {
  name: string;
  /** This machine's address on the veth pair (bind servers here too). */
  hostIp: string;
  /** The namespace's address. */
  nsIp: string;
  /** `argv` run inside the namespace (the same process: `ip netns exec` execs it). */
  spawn(argv: string[], env: NodeJS.ProcessEnv): ChildProcess;
  /** Removes the namespace and the veth pair; safe to call twice. */
  remove(): void;
}

function ip(args: string[]): string {
  try {
    return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const detail = (err as { stderr?: string }).stderr?.trim() || (err as Error).message;
    throw new Error(`\`ip ${args.join(' ')}\` failed: ${detail} (the netns test needs root and iproute2)`);
  }
}

/** Removes namespaces and veth links left by runs whose process is gone. */
export function removeLeftovers(): void {
  for (const name of ip(['netns', 'list']).match(/magpie-nt-\d+/g) ?? []) {
    if (!alive(Number(name.slice('magpie-nt-'.length)))) ip(['netns', 'del', name]);
  }
  for (const [, link, pid] of ip(['-o', 'link', 'show']).matchAll(/\d+: (mpnt(\d+)h)[@:]/g)) {
    if (link && !alive(Number(pid))) ip(['link', 'del', link]);
  }
}

/** Creates the namespace and its veth pair. @throws with the `ip` command's own words when refused. */
export function createNetns(): Netns {
  removeLeftovers();
  const name = `magpie-nt-${process.pid}`;
  const hostLink = `mpnt${process.pid}h`;
  const nsLink = `mpnt${process.pid}n`;
  const base = `10.213.${process.pid % 250}.${(process.pid % 61) * 4}`;
  const [a, b, c, d] = base.split('.').map(Number) as [number, number, number, number];
  const hostIp = `${a}.${b}.${c}.${d + 1}`;
  const nsIp = `${a}.${b}.${c}.${d + 2}`;
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    if (ip(['netns', 'list']).includes(name)) ip(['netns', 'del', name]);
    // Deleting the namespace deletes its end of the pair, and the pair with it; a half-made one stays.
    if (ip(['-o', 'link', 'show']).includes(`${hostLink}@`)) ip(['link', 'del', hostLink]);
  };
  try {
    ip(['netns', 'add', name]);
    ip(['link', 'add', hostLink, 'type', 'veth', 'peer', 'name', nsLink]);
    ip(['link', 'set', nsLink, 'netns', name]);
    ip(['addr', 'add', `${hostIp}/30`, 'dev', hostLink]);
    ip(['link', 'set', hostLink, 'up']);
    ip(['-n', name, 'addr', 'add', `${nsIp}/30`, 'dev', nsLink]);
    ip(['-n', name, 'link', 'set', nsLink, 'up']);
    ip(['-n', name, 'link', 'set', 'lo', 'up']);
  } catch (err) {
    remove();
    throw err;
  }
  return {
    name,
    hostIp,
    nsIp,
    spawn: (argv, env) =>
      spawn('ip', ['netns', 'exec', name, ...argv], { env, stdio: ['ignore', 'pipe', 'pipe'] }),
    remove,
  };
}

/** A TCP relay: listens on `host` (a free port) and pipes each connection to `target`; counts connections by peer address. */
export async function startRelay(
  host: string,
  target: { host: string; port: number },
): Promise<{ port: number; peers: Map<string, number>; close(): Promise<void> }> {
  const peers = new Map<string, number>();
  const sockets = new Set<net.Socket>();
  const server = net.createServer((inbound) => {
    const peer = inbound.remoteAddress ?? '?';
    peers.set(peer, (peers.get(peer) ?? 0) + 1);
    const outbound = net.connect(target.port, target.host);
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        inbound.destroy();
        outbound.destroy();
      });
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    peers,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

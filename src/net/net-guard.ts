/**
 * Keeps web_fetch on the public internet: a URL's host is resolved first and
 * refused when any address is private, loopback, link-local, unique-local,
 * CGNAT, multicast, unspecified or otherwise not public unicast. An IPv6
 * address that carries an IPv4 one (IPv4-mapped `::ffff:a.b.c.d`,
 * IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`) is judged as the IPv4
 * inside. Cloud metadata services stay refused even when private addresses are
 * allowed. The checked address is the one connected to (a guarded DNS lookup),
 * so a second DNS answer cannot swap it.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppError } from '../errors/index.js';

/** A fetch target the guard refused; the message says why, for the model. */
export class BlockedTargetError extends AppError {
  constructor(message: string) {
    super('TOOL_FAILED', message);
  }
}

/** The range name given to cloud metadata services. */
export const METADATA_RANGE = 'cloud metadata';

/**
 * Instance metadata and platform services of the clouds magpie may run on: they hand out
 * credentials to anyone on the machine, so web_fetch never reaches them, whatever the policy.
 */
export const METADATA_ADDRESSES: readonly string[] = [
  '169.254.169.254', // AWS, GCP, Azure, OpenStack, DigitalOcean, Hetzner, Linode, Oracle
  'fd00:ec2::254', // AWS IMDS over IPv6
  '169.254.170.2', // AWS ECS task metadata and credentials
  '169.254.170.23', // AWS EKS Pod Identity agent
  'fd00:ec2::23', // AWS EKS Pod Identity agent over IPv6
  'fd20:ce::254', // GCP metadata over IPv6
  '100.100.100.200', // Alibaba Cloud
  '169.254.0.23', // Tencent Cloud
  '169.254.42.42', // Scaleway
  'fd00:42::42', // Scaleway over IPv6
  '192.0.0.192', // Oracle Cloud (legacy)
  '168.63.129.16', // Azure WireServer (a public address, the host's agent channel)
  'fe80::a9fe:a9fe', // OpenStack metadata over IPv6
];

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * The address to judge: an IPv6 address carrying an IPv4 one becomes that IPv4
 * (IPv4-mapped `::ffff:0:0/96`, IPv4-compatible `::/96` other than `::` and `::1`,
 * NAT64 `64:ff9b::/96`); anything else stays as parsed. Undefined when not an IP.
 */
export function effectiveAddress(address: string): Address | undefined {
  if (!ipaddr.isValid(address)) return undefined;
  const ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv4') return ip;
  const p = (ip as ipaddr.IPv6).parts;
  const zeroTo = (n: number) => p.slice(0, n).every((part) => part === 0);
  const mapped = zeroTo(5) && p[5] === 0xffff;
  const compatible = zeroTo(6) && !(p[6] === 0 && (p[7] === 0 || p[7] === 1));
  const nat64 = p[0] === 0x64 && p[1] === 0xff9b && p.slice(2, 6).every((part) => part === 0);
  if (!mapped && !compatible && !nat64) return ip;
  return new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);
}

function canonical(ip: Address): string {
  return ip.toNormalizedString();
}

const METADATA = new Set(METADATA_ADDRESSES.map((a) => canonical(ipaddr.parse(a))));

/** True when `address` (in any spelling, IPv4 embedded in IPv6 included) is a cloud metadata service. */
export function isMetadataAddress(address: string): boolean {
  const ip = effectiveAddress(address);
  return ip !== undefined && METADATA.has(canonical(ip));
}

/**
 * The ipaddr.js range of `address` when it is not a public unicast address,
 * else undefined. An IPv4 address inside IPv6 is judged as that IPv4.
 *
 * @example
 * forbiddenRange('10.0.0.1')          // → 'private'
 * forbiddenRange('::ffff:127.0.0.1')  // → 'loopback'
 * forbiddenRange('::7f00:1')          // → 'loopback' (IPv4-compatible)
 * forbiddenRange('93.184.215.14')     // → undefined
 */
export function forbiddenRange(address: string): string | undefined {
  const ip = effectiveAddress(address);
  if (!ip) return 'invalid';
  const range = ip.range();
  return range === 'unicast' ? undefined : range;
}

/** Which addresses web_fetch may reach besides public unicast ones. Metadata services are never reachable. */
export interface NetPolicy {
  /** Any address at all (private, loopback, link-local…) except cloud metadata services. */
  allowPrivate: boolean;
  /** Exact addresses allowed even though not public (a trusted LAN service). @defaultValue [] */
  allowAddresses?: readonly string[];
}

/** Why `address` may not be reached under `policy` (its range, or {@link METADATA_RANGE}), or undefined when it may. */
export function blockedRange(address: string, policy: NetPolicy): string | undefined {
  const ip = effectiveAddress(address);
  if (!ip) return 'invalid';
  if (METADATA.has(canonical(ip))) return METADATA_RANGE;
  if (policy.allowPrivate) return undefined;
  const range = forbiddenRange(address);
  if (range === undefined) return undefined;
  const wanted = canonical(ip);
  return policy.allowAddresses?.some((allowed) => {
    const a = effectiveAddress(allowed);
    return a !== undefined && canonical(a) === wanted;
  })
    ? undefined
    : range;
}

function refuse(host: string, address: string, range: string): BlockedTargetError {
  const shown = host === address ? address : `${host} (${address})`;
  if (range === METADATA_RANGE) {
    return new BlockedTargetError(
      `refused to fetch ${shown}: it is a cloud metadata service, which web_fetch never reaches`,
    );
  }
  return new BlockedTargetError(
    `refused to fetch ${shown}: ${range} addresses are not allowed; only public internet addresses can be fetched`,
  );
}

/**
 * Checks a URL before any connection: http/https only, no credentials, and an
 * IP-literal host must be allowed by `policy`. (Named hosts are checked by
 * {@link guardedLookup} when connecting.) The URL parser has already turned
 * `2130706433`, `0x7f.1` or `0177.0.0.1` into `127.0.0.1`.
 */
export function assertFetchableUrl(url: URL, policy: NetPolicy): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new BlockedTargetError(`refused to fetch ${url.protocol} URLs; only http and https are supported`);
  }
  if (url.username || url.password) {
    throw new BlockedTargetError('refused to fetch a URL with credentials in it');
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const range = isIP(host) ? blockedRange(host, policy) : undefined;
  if (range) throw refuse(host, host, range);
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** Resolves a host name to all its addresses: `dns.lookup` with `all: true`, or a stand-in. */
export type Resolver = (
  hostname: string,
  options: { all: true; family: number; hints: number },
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * A `lookup` for `http.request` that resolves every address of the host and
 * refuses the connection (with {@link BlockedTargetError}) when any of them
 * is not allowed by `policy`.
 *
 * @param resolve - where the addresses come from. @defaultValue the system resolver (`dns.lookup`)
 */
export function guardedLookup(policy: NetPolicy, resolve: Resolver = dnsLookup): LookupFunction {
  const lookup = (
    hostname: string,
    options: { family?: number; all?: boolean; hints?: number },
    callback: LookupCallback,
  ) => {
    resolve(
      hostname,
      { all: true, family: options.family ?? 0, hints: options.hints ?? 0 },
      (err, addresses) => {
        if (err) return callback(err, []);
        if (addresses.length === 0)
          return callback(new BlockedTargetError(`${hostname} has no addresses`), []);
        for (const { address } of addresses) {
          const range = blockedRange(address, policy);
          if (range) return callback(refuse(hostname, address, range) as NodeJS.ErrnoException, []);
        }
        if (options.all) return callback(null, addresses);
        const first = addresses[0]!;
        return callback(null, first.address, first.family);
      },
    );
  };
  return lookup as unknown as LookupFunction;
}

/**
 * Keeps web_fetch on the public internet: a URL's host is resolved first and
 * refused when any address is private, loopback, link-local, unique-local,
 * CGNAT, multicast, unspecified or otherwise not public unicast (IPv4-mapped
 * IPv6 included). The checked address is the one connected to (a guarded DNS
 * lookup), so a second DNS answer cannot swap it.
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

/**
 * The ipaddr.js range of `address` when it is not a public unicast address,
 * else undefined. IPv4-mapped IPv6 addresses are judged as the IPv4 inside.
 *
 * @example
 * forbiddenRange('10.0.0.1')          // → 'private'
 * forbiddenRange('::ffff:127.0.0.1')  // → 'loopback'
 * forbiddenRange('93.184.215.14')     // → undefined
 */
export function forbiddenRange(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return 'invalid';
  const range = ipaddr.process(address).range();
  return range === 'unicast' ? undefined : range;
}

/** Which addresses web_fetch may reach besides public unicast ones. */
export interface NetPolicy {
  /** Any address at all (private, loopback, link-local…). */
  allowPrivate: boolean;
  /** Exact addresses allowed even though not public (a trusted LAN service). @defaultValue [] */
  allowAddresses?: readonly string[];
}

function normalise(address: string): string {
  return ipaddr.isValid(address) ? ipaddr.process(address).toString() : address;
}

/** Why `address` may not be reached under `policy` (its range), or undefined when it may. */
export function blockedRange(address: string, policy: NetPolicy): string | undefined {
  if (policy.allowPrivate) return undefined;
  const range = forbiddenRange(address);
  if (range === undefined) return undefined;
  const wanted = normalise(address);
  return policy.allowAddresses?.some((allowed) => normalise(allowed) === wanted) ? undefined : range;
}

function refuse(host: string, address: string, range: string): BlockedTargetError {
  const shown = host === address ? address : `${host} (${address})`;
  return new BlockedTargetError(
    `refused to fetch ${shown}: ${range} addresses are not allowed; only public internet addresses can be fetched`,
  );
}

/**
 * Checks a URL before any connection: http/https only, and an IP-literal
 * host must be allowed by `policy`. (Named hosts are checked by
 * {@link guardedLookup} when connecting.)
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

/**
 * A `lookup` for `http.request` that resolves every address of the host and
 * refuses the connection (with {@link BlockedTargetError}) when any of them
 * is not allowed by `policy`.
 */
export function guardedLookup(policy: NetPolicy): LookupFunction {
  const lookup = (
    hostname: string,
    options: { family?: number; all?: boolean; hints?: number },
    callback: LookupCallback,
  ) => {
    dnsLookup(
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

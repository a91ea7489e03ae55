/**
 * The web_fetch address guard on its own: every spelling of loopback and of the
 * cloud metadata services, IPv4 carried inside IPv6 (mapped, compatible, NAT64),
 * and the guarded lookup refusing DNS answers it must not connect to.
 */
import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import {
  BlockedTargetError,
  blockedRange,
  effectiveAddress,
  forbiddenRange,
  guardedLookup,
  isMetadataAddress,
  METADATA_ADDRESSES,
  METADATA_RANGE,
  type NetPolicy,
  type Resolver,
} from '../../../src/net/net-guard.js';

const open: NetPolicy = { allowPrivate: true };
const closed: NetPolicy = { allowPrivate: false };

describe('forbiddenRange', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0:0:0:0:0:ffff:7f00:1', 'loopback'],
    ['::127.0.0.1', 'loopback'],
    ['::7f00:1', 'loopback'],
    ['0:0:0:0:0:0:7f00:1', 'loopback'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['::10.0.0.1', 'private'],
    ['::ffff:10.0.0.1', 'private'],
    ['64:ff9b::c0a8:101', 'private'],
    ['::169.254.169.254', 'linkLocal'],
    ['::0.0.0.2', 'unspecified'],
    ['172.16.5.4', 'private'],
    ['fe80::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['100.100.100.100', 'carrierGradeNat'],
    ['224.0.0.251', 'multicast'],
    ['ff02::1', 'multicast'],
    ['::', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['::ffff:0:7f00:1', 'rfc6145'],
    ['64:ff9b:1::7f00:1', 'rfc6052'],
    ['2002:7f00:1::', '6to4'],
    ['not an address', 'invalid'],
  ])('%s is %s', (address, range) => {
    expect(forbiddenRange(address)).toBe(range);
  });

  it.each([
    '8.8.8.8',
    '93.184.215.14',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '::8.8.8.8',
  ])('%s is public', (address) => {
    expect(forbiddenRange(address)).toBeUndefined();
  });

  it('reads the IPv4 inside mapped, compatible and NAT64 addresses, and leaves other IPv6 alone', () => {
    expect(effectiveAddress('::7f00:1')?.toString()).toBe('127.0.0.1');
    expect(effectiveAddress('::ffff:7f00:1')?.toString()).toBe('127.0.0.1');
    expect(effectiveAddress('64:ff9b::a9fe:a9fe')?.toString()).toBe('169.254.169.254');
    expect(effectiveAddress('::1')?.kind()).toBe('ipv6');
    expect(effectiveAddress('::')?.kind()).toBe('ipv6');
    expect(effectiveAddress('2606:4700::1111')?.kind()).toBe('ipv6');
    expect(effectiveAddress('example.com')).toBeUndefined();
  });
});

describe('cloud metadata services', () => {
  it.each([
    '169.254.169.254',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '::169.254.169.254',
    '::a9fe:a9fe',
    '64:ff9b::a9fe:a9fe',
    'fd00:ec2::254',
    'FD00:EC2:0:0:0:0:0:254',
    'fd20:ce::254',
    '169.254.170.2',
    '100.100.100.200',
    '::ffff:100.100.100.200',
    '168.63.129.16',
  ])('%s stays blocked with private addresses allowed', (address) => {
    expect(isMetadataAddress(address)).toBe(true);
    expect(blockedRange(address, open)).toBe(METADATA_RANGE);
    expect(blockedRange(address, { allowPrivate: false, allowAddresses: [address] })).toBe(METADATA_RANGE);
  });

  it('every listed address is a valid IP', () => {
    for (const address of METADATA_ADDRESSES) expect(effectiveAddress(address), address).toBeDefined();
  });

  it('neighbours of the metadata addresses follow the ordinary policy', () => {
    expect(blockedRange('169.254.169.253', open)).toBeUndefined();
    expect(blockedRange('169.254.169.253', closed)).toBe('linkLocal');
    expect(blockedRange('100.100.100.201', open)).toBeUndefined();
  });
});

describe('blockedRange', () => {
  it('allowAddresses opens exact addresses only (in any spelling), allowPrivate opens all', () => {
    const trusted = { allowPrivate: false, allowAddresses: ['127.0.0.1'] };
    expect(blockedRange('127.0.0.1', trusted)).toBeUndefined();
    expect(blockedRange('::ffff:127.0.0.1', trusted)).toBeUndefined();
    expect(blockedRange('::7f00:1', trusted)).toBeUndefined();
    expect(blockedRange('127.0.0.2', trusted)).toBe('loopback');
    expect(blockedRange('10.0.0.1', open)).toBeUndefined();
    expect(blockedRange('::7f00:1', open)).toBeUndefined();
    expect(blockedRange('::7f00:1', closed)).toBe('loopback');
  });
});

/** Runs a guarded lookup the way node:http does and returns what its callback got. */
function lookUp(
  policy: NetPolicy,
  resolve: Resolver,
  all: boolean,
): Promise<{ err: unknown; address: unknown; family: unknown }> {
  const lookup = guardedLookup(policy, resolve) as unknown as (
    h: string,
    o: object,
    cb: (e: unknown, a: unknown, f?: unknown) => void,
  ) => void;
  return new Promise((done) => {
    lookup('example.test', { all }, (err, address, family) => done({ err, address, family }));
  });
}

/** A resolver that answers every name with `addresses`. */
const answering =
  (...addresses: LookupAddress[]): Resolver =>
  (_host, _options, callback) =>
    callback(null, addresses);

describe('guardedLookup', () => {
  it('refuses a name that resolves to loopback (the system resolver, localhost)', async () => {
    const lookup = guardedLookup(closed);
    const err = await new Promise<unknown>((resolve) => {
      (lookup as unknown as (h: string, o: object, cb: (e: unknown) => void) => void)(
        'localhost',
        { all: true },
        resolve,
      );
    });
    expect(err).toBeInstanceOf(BlockedTargetError);
  });

  it('refuses when any answer is blocked, even after a public one', async () => {
    const { err } = await lookUp(
      closed,
      answering({ address: '93.184.215.14', family: 4 }, { address: '::7f00:1', family: 6 }),
      true,
    );
    expect(err).toBeInstanceOf(BlockedTargetError);
    expect((err as Error).message).toBe(
      'refused to fetch example.test (::7f00:1): loopback addresses are not allowed; only public internet addresses can be fetched',
    );
  });

  it.each(['169.254.169.254', '::ffff:a9fe:a9fe', 'fd00:ec2::254', '64:ff9b::a9fe:a9fe'])(
    'refuses a DNS answer of %s with private addresses allowed',
    async (address) => {
      const { err } = await lookUp(
        open,
        answering({ address, family: address.includes(':') ? 6 : 4 }),
        false,
      );
      expect(err).toBeInstanceOf(BlockedTargetError);
      expect((err as Error).message).toContain('cloud metadata service');
    },
  );

  it('passes allowed answers on, one or all', async () => {
    const resolve = answering({ address: '10.0.0.5', family: 4 }, { address: 'fd12::5', family: 6 });
    expect(await lookUp(open, resolve, false)).toEqual({ err: null, address: '10.0.0.5', family: 4 });
    const all = await lookUp(open, resolve, true);
    expect(all.err).toBeNull();
    expect(all.address).toHaveLength(2);
  });
});

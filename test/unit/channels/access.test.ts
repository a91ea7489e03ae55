/**
 * Access and pairing on real Redis: allow-lists, codes and approvals, and the
 * limits that keep strangers from flooding the owner or filling Redis: the
 * same code and at most one message per interval per sender, a cap on pending
 * requests (atomic under concurrency, nothing stored beyond it), and expired
 * codes pruned without anyone running `pairing list`.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { approvePairing, listPairingRequests, RedisPairingStore } from '../../../src/bus/pairing-store.js';
import {
  AccessControl,
  type AccessControlOptions,
  type PairingOutcome,
} from '../../../src/channels/access.js';
import { waitFor } from '../../fakes/wait-for.js';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
});
afterAll(async () => {
  await redis.quit();
});

const newPrefix = () => `test-${randomUUID()}`;

function pairingFor(prefix: string, extra: Partial<AccessControlOptions> = {}): AccessControl {
  return new AccessControl({
    channel: 'telegram',
    allowFrom: [],
    pairing: new RedisPairingStore(redis, prefix),
    ...extra,
  });
}

/** The code of an outcome that has one. */
function codeOf(outcome: PairingOutcome): string {
  if (outcome.status === 'full') throw new Error('expected a code, got full');
  return outcome.code;
}

/** Every key under the prefix. */
async function keysOf(prefix: string): Promise<string[]> {
  return (await redis.keys(`${prefix}:*`)).sort();
}

/** Waits (bounded) until Redis has expired `key` on its own clock. */
async function expired(key: string): Promise<void> {
  await waitFor(async () => (await redis.exists(key)) === 0, 5_000, `${key} to expire`);
}

describe('AccessControl', () => {
  it('admits ids, @usernames (case-insensitive) and everyone with *', async () => {
    const prefix = newPrefix();
    const access = new AccessControl({
      channel: 'telegram',
      allowFrom: ['42', '@Alice'],
      pairing: new RedisPairingStore(redis, prefix),
    });
    expect(await access.isAllowed({ id: '42' })).toBe(true);
    expect(await access.isAllowed({ id: '7', username: 'alice' })).toBe(true);
    expect(await access.isAllowed({ id: '7', username: 'bob' })).toBe(false);
    expect(await access.isAllowed({ id: '7' })).toBe(false);
    const open = new AccessControl({
      channel: 'telegram',
      allowFrom: ['*'],
      pairing: new RedisPairingStore(redis, prefix),
    });
    expect(await open.isAllowed({ id: '7' })).toBe(true);
  });

  it('does not treat a username as an id or an id as a username', async () => {
    const access = new AccessControl({
      channel: 'telegram',
      allowFrom: ['@42'],
      pairing: new RedisPairingStore(redis, newPrefix()),
    });
    expect(await access.isAllowed({ id: '42' })).toBe(false);
  });

  it('gives a pending sender the same 6-character code until it is approved', async () => {
    const prefix = newPrefix();
    const access = pairingFor(prefix);
    const sender = { id: '1001', username: 'carol', displayName: 'Carol C' };
    const first = await access.requestPairing(sender, '1001');
    expect(first.status).toBe('send');
    const code = codeOf(first);
    expect(code).toMatch(/^[A-Z2-9]{6}$/);
    expect(codeOf(await access.requestPairing(sender, '1001'))).toBe(code);
    const other = codeOf(await access.requestPairing({ id: '1002' }, '1002'));
    expect(other).not.toBe(code);

    const list = await listPairingRequests(redis, prefix);
    expect(list.map((r) => r.code).sort()).toEqual([code, other].sort());
    expect(list.find((r) => r.code === code)).toMatchObject({
      channel: 'telegram',
      senderId: '1001',
      username: 'carol',
      displayName: 'Carol C',
      chatId: '1001',
    });

    const approved = await approvePairing(redis, prefix, code.toLowerCase());
    expect(approved?.senderId).toBe('1001');
    expect(await access.isAllowed(sender)).toBe(true);
    expect((await listPairingRequests(redis, prefix)).map((r) => r.code)).toEqual([other]);
    expect(await approvePairing(redis, prefix, code)).toBeUndefined();
  });

  it('keeps approvals per channel', async () => {
    const prefix = newPrefix();
    const telegram = pairingFor(prefix);
    const discord = new AccessControl({
      channel: 'discord',
      allowFrom: [],
      pairing: new RedisPairingStore(redis, prefix),
    });
    const code = codeOf(await telegram.requestPairing({ id: '5' }, '5'));
    await approvePairing(redis, prefix, code);
    expect(await telegram.isAllowed({ id: '5' })).toBe(true);
    expect(await discord.isAllowed({ id: '5' })).toBe(false);
  });

  it('returns undefined for an unknown code', async () => {
    expect(await approvePairing(redis, newPrefix(), 'ZZZZZZ')).toBeUndefined();
  });

  it('expires codes after the TTL and then issues a new one', async () => {
    const prefix = newPrefix();
    const access = pairingFor(prefix, { codeTtlSeconds: 1 });
    const code = codeOf(await access.requestPairing({ id: '9' }, '9'));
    await expired(`${prefix}:pairing:code:${code}`);
    expect(await listPairingRequests(redis, prefix)).toEqual([]);
    expect(await approvePairing(redis, prefix, code)).toBeUndefined();
    const next = await access.requestPairing({ id: '9' }, '9');
    expect(next).toMatchObject({ status: 'send', code: expect.stringMatching(/^[A-Z2-9]{6}$/) });
    expect((await listPairingRequests(redis, prefix)).map((r) => r.code)).toEqual([codeOf(next)]);
  });
});

describe('pairing limits', () => {
  it('sends a sender who keeps writing the same code once, then again only after the interval', async () => {
    const prefix = newPrefix();
    const access = pairingFor(prefix, { repeatAfterSeconds: 1 });
    const sender = { id: '2001' };
    const first = await access.requestPairing(sender, '2001');
    expect(first.status).toBe('send');
    const code = codeOf(first);
    for (let i = 0; i < 5; i++)
      expect(await access.requestPairing(sender, '2001')).toEqual({ status: 'quiet', code });
    await expired(`${prefix}:pairing:notified:telegram:2001`);
    expect(await access.requestPairing(sender, '2001')).toEqual({ status: 'send', code });
    expect(await access.requestPairing(sender, '2001')).toEqual({ status: 'quiet', code });
  });

  it('waits 10 minutes by default before sending a code again', async () => {
    const prefix = newPrefix();
    await pairingFor(prefix).requestPairing({ id: '2101' }, '2101');
    const ttl = await redis.ttl(`${prefix}:pairing:notified:telegram:2101`);
    expect(ttl).toBeGreaterThan(590);
    expect(ttl).toBeLessThanOrEqual(600);
  });

  it('keeps at most maxPending requests: later strangers get nothing and nothing is stored for them', async () => {
    const prefix = newPrefix();
    const access = pairingFor(prefix, { maxPending: 3 });
    const codes = [];
    for (const id of ['1', '2', '3']) codes.push(codeOf(await access.requestPairing({ id }, id)));
    const before = await keysOf(prefix);
    for (let i = 0; i < 50; i++) {
      expect(await access.requestPairing({ id: `stranger-${i}` }, `stranger-${i}`)).toEqual({
        status: 'full',
      });
    }
    expect(await keysOf(prefix)).toEqual(before);
    // A sender already pending still gets their code; an approval frees a place.
    expect(await access.requestPairing({ id: '2' }, '2')).toEqual({ status: 'quiet', code: codes[1] });
    await approvePairing(redis, prefix, codes[0] as string);
    expect((await access.requestPairing({ id: 'late' }, 'late')).status).toBe('send');
    expect((await access.requestPairing({ id: 'later' }, 'later')).status).toBe('full');
  });

  it('caps pending requests atomically when many strangers write at once', async () => {
    const prefix = newPrefix();
    const access = pairingFor(prefix, { maxPending: 5 });
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, (_, i) => access.requestPairing({ id: `s${i % 20}` }, `s${i % 20}`)),
    );
    const sent = outcomes.filter((o) => o.status === 'send');
    expect(sent).toHaveLength(5);
    expect(new Set(sent.map(codeOf)).size).toBe(5);
    expect(await listPairingRequests(redis, prefix)).toHaveLength(5);
    // Each sender has at most one code, however many messages they sent at once.
    const codesBySender = new Map<string, Set<string>>();
    outcomes.forEach((o, i) => {
      if (o.status === 'full') return;
      const id = `s${i % 20}`;
      codesBySender.set(id, (codesBySender.get(id) ?? new Set()).add(o.code));
    });
    for (const set of codesBySender.values()) expect(set.size).toBe(1);
  });

  it('prunes expired codes without anyone running pairing list: the cap frees up, every key expires', async () => {
    const prefix = newPrefix();
    const access = pairingFor(prefix, { maxPending: 1, codeTtlSeconds: 1, repeatAfterSeconds: 1 });
    const code = codeOf(await access.requestPairing({ id: 'a' }, 'a'));
    expect((await access.requestPairing({ id: 'b' }, 'b')).status).toBe('full');
    await expired(`${prefix}:pairing:code:${code}`);
    // No `pairing list` ran: the next request prunes the expired code itself.
    expect((await access.requestPairing({ id: 'b' }, 'b')).status).toBe('send');
    expect(await redis.zcard(`${prefix}:pairing:codes`)).toBe(1);
    // Left alone, everything of the pending requests expires on its own.
    await waitFor(async () => (await keysOf(prefix)).length === 0, 5_000, 'every pairing key to expire');
  });

  it('stores long names cut down', async () => {
    const prefix = newPrefix();
    const access = pairingFor(prefix);
    await access.requestPairing({ id: 'n', username: 'u'.repeat(5000), displayName: 'd'.repeat(5000) }, 'n');
    const [request] = await listPairingRequests(redis, prefix);
    expect(request?.username).toHaveLength(64);
    expect(request?.displayName).toHaveLength(64);
  });

  it('rejects limits that are not positive whole numbers', () => {
    const prefix = newPrefix();
    expect(() => pairingFor(prefix, { maxPending: 0 })).toThrow(RangeError);
    expect(() => pairingFor(prefix, { repeatAfterSeconds: 1.5 })).toThrow(RangeError);
    expect(() => pairingFor(prefix, { codeTtlSeconds: -1 })).toThrow(RangeError);
  });
});

import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AccessControl, approvePairing, listPairingRequests } from '../../../src/channels/access.js';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
});
afterAll(async () => {
  await redis.quit();
});

const newPrefix = () => `test-${randomUUID()}`;

describe('AccessControl', () => {
  it('admits ids, @usernames (case-insensitive) and everyone with *', async () => {
    const prefix = newPrefix();
    const access = new AccessControl({ channel: 'telegram', allowFrom: ['42', '@Alice'], redis, prefix });
    expect(await access.isAllowed({ id: '42' })).toBe(true);
    expect(await access.isAllowed({ id: '7', username: 'alice' })).toBe(true);
    expect(await access.isAllowed({ id: '7', username: 'bob' })).toBe(false);
    expect(await access.isAllowed({ id: '7' })).toBe(false);
    const open = new AccessControl({ channel: 'telegram', allowFrom: ['*'], redis, prefix });
    expect(await open.isAllowed({ id: '7' })).toBe(true);
  });

  it('does not treat a username as an id or an id as a username', async () => {
    const access = new AccessControl({ channel: 'telegram', allowFrom: ['@42'], redis, prefix: newPrefix() });
    expect(await access.isAllowed({ id: '42' })).toBe(false);
  });

  it('gives a pending sender the same 6-character code until it is approved', async () => {
    const prefix = newPrefix();
    const access = new AccessControl({ channel: 'telegram', allowFrom: [], redis, prefix });
    const sender = { id: '1001', username: 'carol', displayName: 'Carol C' };
    const code = await access.requestPairing(sender, '1001');
    expect(code).toMatch(/^[A-Z2-9]{6}$/);
    expect(await access.requestPairing(sender, '1001')).toBe(code);
    const other = await access.requestPairing({ id: '1002' }, '1002');
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
    const telegram = new AccessControl({ channel: 'telegram', allowFrom: [], redis, prefix });
    const discord = new AccessControl({ channel: 'discord', allowFrom: [], redis, prefix });
    const code = await telegram.requestPairing({ id: '5' }, '5');
    await approvePairing(redis, prefix, code);
    expect(await telegram.isAllowed({ id: '5' })).toBe(true);
    expect(await discord.isAllowed({ id: '5' })).toBe(false);
  });

  it('returns undefined for an unknown code', async () => {
    expect(await approvePairing(redis, newPrefix(), 'ZZZZZZ')).toBeUndefined();
  });

  it('expires codes after the TTL and then issues a new one', async () => {
    const prefix = newPrefix();
    const access = new AccessControl({
      channel: 'telegram',
      allowFrom: [],
      redis,
      prefix,
      codeTtlSeconds: 1,
    });
    const code = await access.requestPairing({ id: '9' }, '9');
    // Redis expires keys on its own clock: wait for the key to vanish (bounded poll, no fixed sleep).
    const deadline = Date.now() + 5000;
    while ((await redis.exists(`${prefix}:pairing:code:${code}`)) === 1) {
      if (Date.now() > deadline) throw new Error('code did not expire');
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await listPairingRequests(redis, prefix)).toEqual([]);
    expect(await approvePairing(redis, prefix, code)).toBeUndefined();
    const next = await access.requestPairing({ id: '9' }, '9');
    expect(next).toMatch(/^[A-Z2-9]{6}$/);
    expect((await listPairingRequests(redis, prefix)).map((r) => r.code)).toEqual([next]);
  });
});

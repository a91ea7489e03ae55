/**
 * One contract suite for both CooldownStores — in memory (`magpie agent`) and
 * in real Redis (the daemon's workers): cool-down, doubling, cap, Retry-After,
 * exactly one probe once a cool-down runs out, success forgets, release lets
 * another try, an endpoint key benches its models. Redis only: two
 * connections (two workers) racing for the probe get exactly one, and the key
 * expires on its own.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { Bus } from '../../../src/bus/bus.js';
import { RedisCooldownStore } from '../../../src/bus/cooldown-store.js';
import { silentLogger } from '../../../src/log/index.js';
import {
  type CooldownPolicy,
  type CooldownStore,
  cooldownKeys,
  MemoryCooldownStore,
} from '../../../src/providers/cooldown.js';
import { testConfig, waitFor } from '../bus/helpers.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

// Long enough that a loaded machine does not see a cool-down run out between two steps of a test.
const policy: CooldownPolicy = { baseMs: 800, maxMs: 4_000 };
const keys = cooldownKeys('http://127.0.0.1:9/v1', 'm1');
const both = [keys.endpoint, keys.model];
const failure = {
  label: 'm1 at http://127.0.0.1:9/v1',
  reason: 'the model endpoint failed (503)',
  short: 'server error 503',
};

async function redisStore(): Promise<{
  store: RedisCooldownStore;
  redis: Redis;
  prefix: string;
  url: string;
}> {
  const config = testConfig();
  const bus = await Bus.connect({ config, logger: silentLogger() });
  closers.push(() => bus.close());
  return {
    store: new RedisCooldownStore(bus.redis, bus.prefix),
    redis: bus.redis,
    prefix: bus.prefix,
    url: config.redis.url!,
  };
}

const stores: Array<[string, () => Promise<CooldownStore>]> = [
  ['memory', async () => new MemoryCooldownStore()],
  ['redis', async () => (await redisStore()).store],
];

/** Waits (by peeking, which claims nothing) until no cool-down blocks `k`. */
async function cooledOff(store: CooldownStore, k: string[]): Promise<void> {
  await waitFor(async () => (await store.peek(k)) === undefined, 5_000, 'the cool-down to end');
}

describe.each(stores)('CooldownStore contract: %s', (_name, make) => {
  it('lets a call through when nothing failed', async () => {
    const store = await make();
    expect(await store.claim(both, 1_000)).toEqual({ state: 'free' });
    expect(await store.peek(both)).toBeUndefined();
    expect(await store.list()).toEqual([]);
  });

  it('cools a failed key down for baseMs and says why', async () => {
    const store = await make();
    const entry = await store.failed(keys.model, failure, policy);
    expect(entry).toMatchObject({
      key: keys.model,
      failures: 1,
      label: failure.label,
      reason: failure.reason,
      short: 'server error 503',
    });
    expect(entry.leftMs).toBeGreaterThan(700);
    expect(entry.leftMs).toBeLessThanOrEqual(800);
    const check = await store.claim(both, 1_000);
    expect(check.state).toBe('cooling');
    if (check.state === 'cooling') expect(check.entry.key).toBe(keys.model);
    expect((await store.list()).map((e) => e.key)).toEqual([keys.model]);
  });

  it('does not stretch a running cool-down for failures of calls that started before it', async () => {
    const store = await make();
    await store.failed(keys.model, failure, policy);
    const again = await store.failed(keys.model, { ...failure, reason: 'second' }, policy);
    expect(again.failures).toBe(1);
    expect(again.reason).toBe(failure.reason);
  });

  it('hands out exactly one probe when the cool-down runs out; the rest wait for its verdict', async () => {
    const store = await make();
    await store.failed(keys.model, failure, policy);
    await cooledOff(store, both);
    const claims = await Promise.all(Array.from({ length: 6 }, () => store.claim(both, 5_000)));
    expect(claims.filter((c) => c.state === 'probe')).toHaveLength(1);
    expect(claims.filter((c) => c.state === 'cooling')).toHaveLength(5);
    expect(await store.peek(both)).toMatchObject({ key: keys.model, leftMs: 0 });
  });

  it('doubles the cool-down when the probe fails too, up to maxMs', async () => {
    const store = await make();
    await store.failed(keys.model, failure, policy);
    await cooledOff(store, both);
    expect((await store.claim(both, 5_000)).state).toBe('probe');
    const second = await store.failed(keys.model, failure, policy);
    expect(second.failures).toBe(2);
    expect(second.leftMs).toBeGreaterThan(1_400);
    expect(second.leftMs).toBeLessThanOrEqual(1_600);
    const capped = await make();
    const k = 'model capped';
    // maxMs 300: the failures are forgotten a quiet maxMs after the cool-down ends, so the poll
    // below must come back within it — wide enough for a loaded machine; 12 doublings pass it.
    let last = await capped.failed(k, failure, { baseMs: 1, maxMs: 300 });
    for (let i = 0; i < 12; i++) {
      await waitFor(async () => (await capped.peek([k])) === undefined, 2_000, 'the short cool-down', 1);
      last = await capped.failed(k, failure, { baseMs: 1, maxMs: 300 });
    }
    expect(last.failures).toBe(13);
    expect(last.leftMs).toBeGreaterThan(250);
    expect(last.leftMs).toBeLessThanOrEqual(300);
  });

  it('keeps a Retry-After longer than the doubling, within maxMs', async () => {
    const store = await make();
    const entry = await store.failed(keys.model, { ...failure, retryAfterMs: 3_000 }, policy);
    expect(entry.leftMs).toBeGreaterThan(2_800);
    const capped = await store.failed('model other', { ...failure, retryAfterMs: 3_600_000 }, policy);
    expect(capped.leftMs).toBeLessThanOrEqual(policy.maxMs);
    expect(capped.leftMs).toBeGreaterThan(policy.maxMs - 300);
  });

  it('forgets the failures once the probe succeeds', async () => {
    const store = await make();
    await store.failed(keys.model, failure, policy);
    await cooledOff(store, both);
    expect((await store.claim(both, 5_000)).state).toBe('probe');
    await store.succeeded(both);
    expect(await store.claim(both, 5_000)).toEqual({ state: 'free' });
    expect((await store.failed(keys.model, failure, policy)).failures).toBe(1);
  });

  it('lets another caller probe after a released (cancelled) probe', async () => {
    const store = await make();
    await store.failed(keys.model, failure, policy);
    await cooledOff(store, both);
    expect((await store.claim(both, 60_000)).state).toBe('probe');
    expect((await store.claim(both, 60_000)).state).toBe('cooling');
    await store.release(both);
    expect((await store.claim(both, 60_000)).state).toBe('probe');
  });

  it('benches every model of an endpoint that cannot be reached, and only that endpoint', async () => {
    const store = await make();
    await store.failed(
      keys.endpoint,
      { label: 'http://127.0.0.1:9/v1 (every model)', reason: 'refused' },
      policy,
    );
    const other = cooldownKeys('http://127.0.0.1:9/v1/', 'm2');
    expect((await store.claim([other.endpoint, other.model], 1_000)).state).toBe('cooling');
    const elsewhere = cooldownKeys('http://127.0.0.1:10/v1', 'm1');
    expect((await store.claim([elsewhere.endpoint, elsewhere.model], 1_000)).state).toBe('free');
  });
});

describe('RedisCooldownStore across workers', () => {
  it('gives two workers (two connections) one cool-down and one probe between them', async () => {
    const first = await redisStore();
    const second = new Redis(first.url, { lazyConnect: false });
    closers.push(async () => {
      second.disconnect();
    });
    const other = new RedisCooldownStore(second, first.prefix);
    await first.store.failed(keys.model, failure, policy);
    expect((await other.claim(both, 5_000)).state).toBe('cooling');
    await cooledOff(other, both);
    const claims = await Promise.all([
      ...Array.from({ length: 5 }, () => first.store.claim(both, 5_000)),
      ...Array.from({ length: 5 }, () => other.claim(both, 5_000)),
    ]);
    expect(claims.filter((c) => c.state === 'probe')).toHaveLength(1);
  });

  it('lets a key expire on its own a quiet maxMs after its cool-down', async () => {
    const { store, redis, prefix } = await redisStore();
    await store.failed(keys.model, failure, policy);
    const ttl = await redis.pttl(`${prefix}:cooldown:${keys.model}`);
    expect(ttl).toBeGreaterThan(policy.maxMs);
    expect(ttl).toBeLessThanOrEqual(policy.baseMs + policy.maxMs);
  });
});

describe('MemoryCooldownStore', () => {
  it('forgets failures after a quiet maxMs past the cool-down', async () => {
    let now = 1_000_000;
    const store = new MemoryCooldownStore(() => now);
    await store.failed(keys.model, failure, policy);
    now += policy.baseMs + policy.maxMs + 1;
    expect(await store.list()).toEqual([]);
    expect((await store.failed(keys.model, failure, policy)).failures).toBe(1);
  });
});

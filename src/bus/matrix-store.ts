/**
 * The Matrix channel's state in Redis (the `MatrixStore` port of
 * channels/matrix/store.ts, implemented structurally): the sync position
 * (`next_batch`) per account, the device a password login created (its
 * access token and device id, so a restart reuses the same device), and the
 * encrypted rooms already told that magpie cannot read them.
 */
import type { Redis } from 'ioredis';
import { keys } from './keys.js';

export class RedisMatrixStore {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  /** The `since` token of the last sync whose events were all published; undefined on a first start. */
  async position(account: string): Promise<string | undefined> {
    return (await this.#redis.get(this.#key('sync', account))) ?? undefined;
  }

  async savePosition(account: string, since: string): Promise<void> {
    await this.#redis.set(this.#key('sync', account), since);
  }

  /** The access token and device id a password login gave (a hash), if one was kept. */
  async device(account: string): Promise<{ accessToken: string; deviceId: string } | undefined> {
    const [accessToken, deviceId] = await this.#redis.hmget(
      this.#key('device', account),
      'accessToken',
      'deviceId',
    );
    return accessToken && deviceId ? { accessToken, deviceId } : undefined;
  }

  async saveDevice(account: string, device: { accessToken: string; deviceId: string }): Promise<void> {
    await this.#redis.hset(this.#key('device', account), device);
  }

  async forgetDevice(account: string): Promise<void> {
    await this.#redis.del(this.#key('device', account));
  }

  /** True the first time it is asked for a room (every gateway together): that room is then told once. */
  async firstEncryptedNotice(room: string): Promise<boolean> {
    return (await this.#redis.set(this.#key('encrypted-notice', room), '1', 'NX')) === 'OK';
  }

  #key(kind: 'sync' | 'device' | 'encrypted-notice', id: string): string {
    return keys.matrix(this.#prefix, kind, id);
  }
}

/**
 * The end-to-end encryption half of the fake homeserver (matrix-server.ts):
 * what a server keeps for its clients' crypto, as the client-server API has
 * it, so two real Rust crypto machines (the bot's and the user's
 * matrix-js-sdk) can set up Olm sessions and share Megolm keys through it.
 *
 * - `POST /keys/upload`: device keys, one-time keys and fallback keys per
 *   device; answers the one-time key counts. New device keys mark the user's
 *   device list changed (`device_lists.changed` in later syncs).
 * - `POST /keys/query`: the device keys of the users asked for.
 * - `POST /keys/claim`: takes one one-time key of a device (the fallback key
 *   when none is left).
 * - `PUT /sendToDevice/{type}/{txn}`: queued for each recipient device (or
 *   every device of a user, `*`) and given in its syncs' `to_device`.
 *
 * Everything is ordered on the server's one sync position (`nextPos`): a sync
 * gives what came after its `since`. Cross-signing and key backup are not served.
 */

type Json = Record<string, unknown>;

interface DeviceKeys {
  keys: Json | undefined;
  oneTime: Map<string, unknown>;
  fallback: Map<string, unknown>;
}

export interface FakeMatrixKeys {
  upload(userId: string, deviceId: string, body: Json): Json;
  query(body: Json): Json;
  claim(body: Json): Json;
  sendToDevice(sender: string, type: string, body: Json): void;
  /** The crypto part of a sync for one device after `since` (everything when undefined). */
  syncPart(userId: string, deviceId: string, since: number | undefined): Json;
  hasNews(userId: string, deviceId: string, since: number): boolean;
  /** The device keys `deviceId` uploaded last (its identity), for tests. */
  deviceKeys(userId: string, deviceId: string): Json | undefined;
  /** To-device events sent so far, for tests (type and recipient only). */
  readonly sent: { type: string; to: string }[];
}

/** The key store of a fake homeserver; `nextPos` takes the next sync position, `notify` wakes syncs. */
export function fakeMatrixKeys(nextPos: () => number, notify: () => void): FakeMatrixKeys {
  const devices = new Map<string, Map<string, DeviceKeys>>();
  const changes: { pos: number; userId: string }[] = [];
  const inbox: { pos: number; userId: string; deviceId: string; event: Json }[] = [];
  const sent: { type: string; to: string }[] = [];

  const device = (userId: string, deviceId: string): DeviceKeys => {
    let user = devices.get(userId);
    if (!user) {
      user = new Map();
      devices.set(userId, user);
    }
    let d = user.get(deviceId);
    if (!d) {
      d = { keys: undefined, oneTime: new Map(), fallback: new Map() };
      user.set(deviceId, d);
    }
    return d;
  };
  const counts = (d: DeviceKeys) => {
    const out: Record<string, number> = {};
    for (const id of d.oneTime.keys()) {
      const algorithm = id.split(':')[0]!;
      out[algorithm] = (out[algorithm] ?? 0) + 1;
    }
    return out;
  };

  return {
    sent,
    deviceKeys: (userId, deviceId) => devices.get(userId)?.get(deviceId)?.keys,
    upload(userId, deviceId, body) {
      const d = device(userId, deviceId);
      if (isObject(body['device_keys'])) {
        d.keys = body['device_keys'];
        changes.push({ pos: nextPos(), userId });
        notify();
      }
      for (const [id, key] of Object.entries(objectOr(body['one_time_keys']))) d.oneTime.set(id, key);
      const fallback = objectOr(body['fallback_keys']);
      if (Object.keys(fallback).length > 0) d.fallback = new Map(Object.entries(fallback));
      return { one_time_key_counts: counts(d) };
    },
    query(body) {
      const out: Record<string, Json> = {};
      for (const [userId, wanted] of Object.entries(objectOr(body['device_keys']))) {
        const list = Array.isArray(wanted) ? wanted.map(String) : [];
        out[userId] = {};
        for (const [deviceId, d] of devices.get(userId) ?? [])
          if (d.keys && (list.length === 0 || list.includes(deviceId))) out[userId]![deviceId] = d.keys;
      }
      return {
        device_keys: out,
        failures: {},
        master_keys: {},
        self_signing_keys: {},
        user_signing_keys: {},
      };
    },
    claim(body) {
      const out: Record<string, Record<string, Json>> = {};
      for (const [userId, wanted] of Object.entries(objectOr(body['one_time_keys']))) {
        for (const [deviceId, algorithm] of Object.entries(objectOr(wanted))) {
          const d = devices.get(userId)?.get(deviceId);
          if (!d) continue;
          const pick = (keys: Map<string, unknown>, take: boolean) => {
            const id = [...keys.keys()].find((k) => k.startsWith(`${algorithm}:`));
            if (id === undefined) return undefined;
            const key = keys.get(id);
            if (take) keys.delete(id);
            return { [id]: key };
          };
          const key = pick(d.oneTime, true) ?? pick(d.fallback, false);
          if (!key) continue;
          out[userId] ??= {};
          out[userId]![deviceId] = key;
        }
      }
      return { one_time_keys: out, failures: {} };
    },
    sendToDevice(sender, type, body) {
      for (const [userId, perDevice] of Object.entries(objectOr(body['messages']))) {
        for (const [target, content] of Object.entries(objectOr(perDevice))) {
          const ids = target === '*' ? [...(devices.get(userId)?.keys() ?? [])] : [target];
          for (const deviceId of ids) {
            inbox.push({ pos: nextPos(), userId, deviceId, event: { type, sender, content } });
            sent.push({ type, to: `${userId}/${deviceId}` });
          }
        }
      }
      notify();
    },
    syncPart(userId, deviceId, since) {
      const after = (p: number) => since === undefined || p > since;
      const d = devices.get(userId)?.get(deviceId);
      return {
        to_device: {
          events: inbox
            .filter((e) => e.userId === userId && e.deviceId === deviceId && after(e.pos))
            .map((e) => e.event),
        },
        device_lists: {
          changed: [
            ...new Set(changes.filter((c) => since !== undefined && after(c.pos)).map((c) => c.userId)),
          ],
          left: [],
        },
        device_one_time_keys_count: d ? counts(d) : {},
        device_unused_fallback_key_types: d
          ? [...new Set([...d.fallback.keys()].map((k) => k.split(':')[0]!))]
          : [],
      };
    },
    hasNews(userId, deviceId, since) {
      return (
        changes.some((c) => c.pos > since && c.userId !== userId) ||
        inbox.some((e) => e.pos > since && e.userId === userId && e.deviceId === deviceId)
      );
    },
  };
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function objectOr(value: unknown): Json {
  return isObject(value) ? value : {};
}

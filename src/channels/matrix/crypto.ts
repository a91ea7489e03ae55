/**
 * End-to-end encryption for the Matrix channel, with matrix-js-sdk's Rust
 * crypto (`@matrix-org/matrix-sdk-crypto-wasm`, its WebAssembly build) driven
 * by magpie's own sync loop: the SDK's `initRustCrypto` expects the SDK's
 * `startClient` and its Room objects, which magpie does not use, so the
 * OlmMachine is driven directly, the way the SDK's sync does it:
 *
 * - each sync's `to_device` events, `device_lists`, one-time key counts and
 *   unused fallback key types go to `receiveSyncChanges` before its room
 *   events; `m.room.encryption` state sets the room's settings (kept in the
 *   crypto store, so they outlive a restart);
 * - the machine's outgoing requests (key upload, query, claim, to-device) are
 *   sent by the SDK's own `OutgoingRequestProcessor` over the client's HTTP;
 * - an `m.room.encrypted` event is decrypted with `decryptRoomEvent` (devices
 *   need not be verified: magpie trusts what the homeserver says a user's
 *   devices are, as Element does before verification);
 * - before anything is sent into an encrypted room, the room key is shared
 *   with every device of its joined members and the content encrypted with
 *   `encryptRoomEvent`. A room is known encrypted from its settings or, when
 *   unknown, by asking the homeserver for its `m.room.encryption` state: if
 *   that cannot be learnt, nothing is sent (never plaintext by mistake).
 *
 * Keys live in the state folder (crypto-store.ts), saved after each sync and
 * each share, before the sync position moves on: a crash replays the sync.
 * One gateway per bot device: two machines sharing a device id would fight.
 */
import {
  CollectStrategy,
  DecryptionSettings,
  DeviceId,
  DeviceLists,
  EncryptionAlgorithm,
  EncryptionSettings,
  initAsync,
  OlmMachine,
  RoomId,
  RoomSettings,
  TrustRequirement,
  UserId,
} from '@matrix-org/matrix-sdk-crypto-wasm';
import type { MatrixClient } from 'matrix-js-sdk';
import { MatrixError } from 'matrix-js-sdk';
import { OutgoingRequestProcessor } from 'matrix-js-sdk/lib/rust-crypto/OutgoingRequestProcessor.js';
import { AppError, describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import { toSdkLogger } from './client.js';
import { CryptoStoreFile } from './crypto-store.js';
import type { RawEvent } from './inbound.js';
import type { SyncResponse } from './sync.js';

const MEGOLM = 'm.megolm.v1.aes-sha2';

export interface MatrixCryptoOptions {
  client: MatrixClient;
  userId: string;
  deviceId: string;
  /** The file the keys are kept in (in the state folder). */
  file: string;
  logger: Logger;
}

/** The bot device's crypto; see the file header. */
export class MatrixCrypto {
  readonly #o: MatrixCryptoOptions;
  readonly #olm: OlmMachine;
  readonly #store: CryptoStoreFile;
  readonly #requests: OutgoingRequestProcessor;
  /** Joined members per encrypted room, forgotten when a sync shows a membership change. */
  readonly #members = new Map<string, string[]>();
  /** Rooms the homeserver said have no m.room.encryption state. */
  readonly #plain = new Set<string>();
  /** One crypto operation at a time (the machine's requests must not be sent twice). */
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(o: MatrixCryptoOptions, olm: OlmMachine, store: CryptoStoreFile) {
    this.#o = o;
    this.#olm = olm;
    this.#store = store;
    this.#requests = new OutgoingRequestProcessor(toSdkLogger(o.logger), olm, o.client.http as never);
  }

  /** Loads the kept keys (or makes a new identity for this device) and publishes them. Rejects if the WebAssembly cannot start. */
  static async start(o: MatrixCryptoOptions): Promise<MatrixCrypto> {
    await initAsync();
    await CryptoStoreFile.provideIndexedDB();
    const store = new CryptoStoreFile(o.file);
    const kept = await store.load();
    const olm = await OlmMachine.initialize(new UserId(o.userId), new DeviceId(o.deviceId), store.prefix);
    olm.roomKeyRequestsEnabled = false;
    const crypto = new MatrixCrypto(o, olm, store);
    await crypto.#serial(() => crypto.#flush());
    await crypto.save();
    o.logger.info(
      { device: o.deviceId, identity: olm.identityKeys.ed25519.toBase64(), kept },
      kept ? 'matrix encryption: device keys loaded' : 'matrix encryption: new device keys made',
    );
    return crypto;
  }

  /** Hands one sync's crypto parts to the machine and sends what it asks for. */
  onSync(sync: SyncResponse): Promise<void> {
    return this.#serial(async () => {
      const raw = sync as SyncResponse & Record<string, unknown>;
      const toDevice = objectOr(raw['to_device'])['events'];
      const lists = objectOr(raw['device_lists']);
      const counts = new Map<string, number>();
      for (const [k, v] of Object.entries(objectOr(raw['device_one_time_keys_count'])))
        if (typeof v === 'number') counts.set(k, v);
      const fallback = raw['device_unused_fallback_key_types'];
      await this.#olm.receiveSyncChanges(
        JSON.stringify(Array.isArray(toDevice) ? toDevice : []),
        new DeviceLists(userIds(lists['changed']), userIds(lists['left'])),
        counts,
        Array.isArray(fallback) ? new Set(fallback.filter((t) => typeof t === 'string')) : undefined,
      );
      for (const [roomId, joined] of Object.entries(sync.rooms?.join ?? {})) {
        const events = [...(joined.state?.events ?? []), ...(joined.timeline?.events ?? [])].filter(isObject);
        for (const event of events) {
          if (event['type'] === 'm.room.member') this.#members.delete(roomId);
          if (event['type'] === 'm.room.encryption' && event['state_key'] === '')
            await this.#setEncrypted(roomId, objectOr(event['content']));
        }
      }
      await this.#flush();
    });
  }

  /** The clear event behind an `m.room.encrypted` one, or undefined when it cannot be decrypted (logged). */
  async decrypt(roomId: string, event: RawEvent): Promise<RawEvent | undefined> {
    try {
      const decrypted = await this.#olm.decryptRoomEvent(
        JSON.stringify(event),
        new RoomId(roomId),
        new DecryptionSettings(TrustRequirement.Untrusted),
      );
      const clear = objectOr(JSON.parse(decrypted.event));
      if (typeof clear['type'] !== 'string' || !isObject(clear['content'])) return undefined;
      return { ...event, type: clear['type'], content: clear['content'] };
    } catch (err) {
      this.#o.logger.warn(
        { room: roomId, event: event['event_id'], err: describeError(err) },
        'matrix encrypted message not decrypted (no key for it)',
      );
      return undefined;
    }
  }

  /** Whether `roomId` is encrypted (asks the homeserver when not known). Rejects DELIVERY_TRANSIENT when it cannot tell. */
  isEncrypted(roomId: string): Promise<boolean> {
    return this.#isEncrypted(roomId);
  }

  /** The event to send for `content`: encrypted when the room is, as it is otherwise. */
  async seal(
    roomId: string,
    type: string,
    content: Record<string, unknown>,
  ): Promise<{ type: string; content: Record<string, unknown> }> {
    if (!(await this.#isEncrypted(roomId))) return { type, content };
    return this.#serial(async () => {
      const members = await this.#joined(roomId);
      // Each call takes its own ids: the WebAssembly takes ownership of the ones it is given.
      const users = () => members.map((u) => new UserId(u));
      await this.#olm.updateTrackedUsers(users());
      await this.#flush();
      const claim = await this.#olm.getMissingSessions(users());
      if (claim) await this.#requests.makeOutgoingRequest(claim);
      const settings = new EncryptionSettings();
      settings.sharingStrategy = CollectStrategy.allDevices();
      for (const request of await this.#olm.shareRoomKey(new RoomId(roomId), users(), settings))
        await this.#requests.makeOutgoingRequest(request);
      const sealed = await this.#olm.encryptRoomEvent(new RoomId(roomId), type, JSON.stringify(content));
      await this.#store.save();
      return { type: 'm.room.encrypted', content: objectOr(JSON.parse(sealed)) };
    });
  }

  /** Writes the keys to the state folder. */
  save(): Promise<void> {
    return this.#serial(() => this.#store.save());
  }

  /** Saves and closes the machine. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#serial(() => this.#store.save());
    this.#olm.close();
  }

  #serial<T>(step: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(step, step);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  /** Sends every request the machine has now (one pass: a failed one is asked again after the next sync). */
  async #flush(): Promise<void> {
    for (const request of await this.#olm.outgoingRequests())
      await this.#requests.makeOutgoingRequest(request).catch((err: unknown) => {
        this.#o.logger.warn({ err: describeError(err) }, 'matrix crypto request failed: tried again later');
      });
  }

  async #setEncrypted(roomId: string, content: Record<string, unknown>): Promise<void> {
    this.#plain.delete(roomId);
    if (content['algorithm'] !== MEGOLM) {
      this.#o.logger.warn(
        { room: roomId, algorithm: content['algorithm'] },
        'matrix room with an unknown encryption',
      );
      return;
    }
    const settings = new RoomSettings();
    settings.algorithm = EncryptionAlgorithm.MegolmV1AesSha2;
    if (typeof content['rotation_period_ms'] === 'number')
      settings.sessionRotationPeriodMs = content['rotation_period_ms'];
    if (typeof content['rotation_period_msgs'] === 'number')
      settings.sessionRotationPeriodMessages = content['rotation_period_msgs'];
    await this.#olm.setRoomSettings(new RoomId(roomId), settings);
  }

  /** Whether `roomId` is encrypted; asks the homeserver when the machine does not know. Rejects when it cannot tell. */
  async #isEncrypted(roomId: string): Promise<boolean> {
    if (await this.#olm.getRoomSettings(new RoomId(roomId))) return true;
    if (this.#plain.has(roomId)) return false;
    let content: Record<string, unknown>;
    try {
      content = await this.#o.client.getStateEvent(roomId, 'm.room.encryption', '');
    } catch (err) {
      if (err instanceof MatrixError && err.errcode === 'M_NOT_FOUND') {
        this.#plain.add(roomId);
        return false;
      }
      throw new AppError(
        'DELIVERY_TRANSIENT',
        `cannot tell whether matrix room ${roomId} is encrypted: ${describeError(err)}`,
        {
          cause: err,
          transient: true,
        },
      );
    }
    await this.#serial(() => this.#setEncrypted(roomId, content));
    if (await this.#olm.getRoomSettings(new RoomId(roomId))) return true;
    throw new AppError('DELIVERY_PERMANENT', `matrix room ${roomId} uses an encryption magpie cannot speak`);
  }

  async #joined(roomId: string): Promise<string[]> {
    let members = this.#members.get(roomId);
    if (!members) {
      members = Object.keys((await this.#o.client.getJoinedRoomMembers(roomId)).joined);
      this.#members.set(roomId, members);
    }
    return members;
  }
}

/** The well-formed user ids of a sync's list (a malformed one is left out, not thrown on). */
function userIds(value: unknown): UserId[] {
  const out: UserId[] = [];
  for (const id of Array.isArray(value) ? value : []) {
    try {
      if (typeof id === 'string') out.push(new UserId(id));
    } catch {
      // not a user id: the homeserver's mistake, nothing to track
    }
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function objectOr(value: unknown): Record<string, unknown> {
  return isObject(value) ? value : {};
}

/**
 * The Matrix channel, over matrix-js-sdk's client: the bot logs in (or reuses
 * its kept device, client.ts), syncs with the position kept in Redis
 * (sync.ts), accepts invitations from allowed users, and hands each message
 * event to the intake (inbound.ts decides). Replies are HTML with a plain
 * body (sender.ts), live replies grow by `m.replace` edits (live.ts), and a
 * typing notification shows while a turn runs.
 *
 * Encrypted rooms are read and answered with the Rust crypto (crypto.ts):
 * encrypted events are decrypted before they are decided on, and everything
 * sent into an encrypted room is encrypted. When the crypto cannot start (the
 * WebAssembly does not load, the kept keys cannot be read, the token has no
 * device), encrypted rooms are not read: the first encrypted event in a room
 * gets one plain notice saying so (once per room across every gateway, in Redis).
 */
import path from 'node:path';
import type { MatrixClient } from 'matrix-js-sdk';
import { streamsTo } from '../../config/index.js';
import { AppError, ConfigError, describeError } from '../../errors/index.js';
import { runAll } from '../../lifecycle/run-all.js';
import type { Logger } from '../../log/index.js';
import type { LiveUpdate } from '../../messages/live-update.js';
import type { Media, OutboundMessage } from '../../messages/messages.js';
import { spokenAudio } from '../../voice/outbound-audio.js';
import { AccessControl } from '../access.js';
import { busIntakePorts, intake } from '../intake.js';
import { LiveRenderer } from '../live/renderer.js';
import { MemoryLiveRecords } from '../live/surface.js';
import { LruMap } from '../lru-map.js';
import { pairingText } from '../pairing-text.js';
import { SendProgress } from '../send-progress.js';
import type { Channel, ChannelDeps } from '../types.js';
import { TypingLoop } from '../typing.js';
import { type Connected, connect } from './client.js';
import { MatrixCrypto } from './crypto.js';
import { plainContent } from './format.js';
import { decideEvent, matrixSender, type RawEvent } from './inbound.js';
import { MatrixLiveSurface } from './live.js';
import { refsToMedia } from './media.js';
import {
  deliverMessage,
  deliverVoice,
  hasEncryptionState,
  inThread,
  type MatrixOutbox,
  type MatrixTarget,
  sendContent,
} from './sender.js';
import type { MatrixStore } from './store.js';
import { type JoinedRoom, SyncLoop, type SyncResponse } from './sync.js';

/** What an encrypted room is told, once. */
export const ENCRYPTED_NOTICE =
  "I can't read encrypted messages here: magpie's end-to-end encryption did not start (its log says why). " +
  'Talk to me in a room with encryption off (it is chosen when the room is created), or ask my owner to fix it.';

/** Tunables (tests shorten them); everything else comes from ChannelDeps. */
export interface MatrixChannelOptions {
  /** Least time between two edits of a live reply. @defaultValue 1500 */
  editIntervalMs?: number;
  /** How long the homeserver holds a sync open. @defaultValue 30000 */
  pollTimeoutMs?: number;
  /** The pause before a sync is tried again. @defaultValue 2000 */
  retryMs?: number;
  /** Time between typing notifications (each lasts 15 s, so one missed tick leaves no gap). @defaultValue 10000 */
  typingIntervalMs?: number;
}

/** What magpie knows of a joined room. */
interface RoomInfo {
  members: number | undefined;
  names: Map<string, string>;
}

/** A Channel over Matrix. Built by the descriptor (`matrixChannel.create`). */
export class MatrixChannel implements Channel {
  readonly name = 'matrix';
  private readonly deps: ChannelDeps;
  private readonly store: MatrixStore;
  private readonly options: MatrixChannelOptions;
  private readonly logger: Logger;
  private readonly access: AccessControl;
  private readonly typing: TypingLoop;
  private readonly progress = new SendProgress();
  private readonly rooms = new LruMap<string, RoomInfo>(5000);
  /** Events the bot sent (a reply to one addresses it). */
  private readonly own = new LruMap<string, true>(5000);
  private connected: Connected | undefined;
  /** The bot device's crypto; undefined when it could not start (encrypted rooms get the notice). */
  private crypto: MatrixCrypto | undefined;
  private sync: SyncLoop | undefined;
  private live: LiveRenderer<string> | undefined;
  private botName: string | undefined;
  private stopping: Promise<void> | undefined;

  constructor(deps: ChannelDeps, store: MatrixStore, options: MatrixChannelOptions = {}) {
    const settings = deps.config.channels.matrix;
    if (!settings.homeserverUrl)
      throw new ConfigError('MATRIX_HOMESERVER_URL is not set: put the homeserver URL in .env');
    this.deps = deps;
    this.store = store;
    this.options = options;
    this.logger = deps.logger.child({ channel: 'matrix' });
    this.typing = new TypingLoop({ logger: this.logger, intervalMs: options.typingIntervalMs ?? 10_000 });
    this.access = new AccessControl({
      channel: 'matrix',
      allowFrom: settings.allowFrom,
      pairing: deps.pairing,
    });
  }

  private get client(): MatrixClient {
    if (!this.connected)
      throw new AppError('DELIVERY_TRANSIENT', 'the Matrix channel is not started', { transient: true });
    return this.connected.client;
  }

  /** Content as it goes out: sealed by the crypto when there is one. */
  private get out(): MatrixOutbox {
    const crypto = this.crypto;
    return {
      client: this.client,
      seal: async (roomId, type, content) =>
        crypto ? crypto.seal(roomId, type, content) : { type, content },
      encrypted: (roomId) => (crypto ? crypto.isEncrypted(roomId) : hasEncryptionState(this.client, roomId)),
    };
  }

  /** Logs in (or reuses the kept device), takes the first sync, then syncs in the background. */
  async start(): Promise<void> {
    const settings = this.deps.config.channels.matrix;
    this.connected = await connect(
      {
        homeserverUrl: settings.homeserverUrl ?? '',
        accessToken: settings.accessToken,
        userId: settings.userId,
        password: settings.password,
      },
      this.store,
      this.logger,
    );
    const { client, userId } = this.connected;
    this.crypto = await this.startCrypto(this.connected);
    this.botName = await client
      .getProfileInfo(userId, 'displayname')
      .then((p) => p.displayname || undefined)
      .catch(() => undefined);
    if (streamsTo(this.deps.config, this.name)) {
      this.live = new LiveRenderer({
        channel: this.name,
        surface: new MatrixLiveSurface({
          out: this.out,
          ...(this.options.editIntervalMs !== undefined
            ? { editIntervalMs: this.options.editIntervalMs }
            : {}),
        }),
        records: this.deps.bus.liveRecords ?? new MemoryLiveRecords(),
        logger: this.logger,
      });
    }
    this.sync = new SyncLoop({
      client,
      account: userId,
      store: this.store,
      logger: this.logger,
      onSync: (sync, first) => this.onSync(sync, first),
      ...(this.options.pollTimeoutMs !== undefined ? { pollTimeoutMs: this.options.pollTimeoutMs } : {}),
      ...(this.options.retryMs !== undefined ? { retryMs: this.options.retryMs } : {}),
    });
    await this.sync.start();
    this.logger.info(
      { bot: userId, device: this.connected.deviceId, encryption: this.crypto !== undefined },
      'matrix connected',
    );
  }

  /** The crypto for this device, its keys in the state folder; undefined (logged) when it cannot start. */
  private async startCrypto({ client, userId, deviceId }: Connected): Promise<MatrixCrypto | undefined> {
    if (!deviceId) {
      this.logger.error('the Matrix access token has no device id: encrypted rooms cannot be read');
      return undefined;
    }
    const file = path.join(
      this.deps.config.stateDir,
      'matrix',
      `${safeName(userId)}.${safeName(deviceId)}.crypto`,
    );
    try {
      return await MatrixCrypto.start({ client, userId, deviceId, file, logger: this.logger });
    } catch (err) {
      this.logger.error(
        { file, err: describeError(err) },
        'matrix end-to-end encryption did not start: encrypted rooms cannot be read',
      );
      return undefined;
    }
  }

  /** Stops the sync (nothing more is taken), then typing; every step runs. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= runAll([
      () => this.sync?.stop(),
      () => this.typing.stopAll(),
      () => this.crypto?.close(),
      () => this.connected?.client.stopClient(),
    ]);
    return this.stopping;
  }

  async preview(update: LiveUpdate): Promise<void> {
    this.live?.update(update);
  }

  async send(message: OutboundMessage): Promise<void> {
    if (message.kind !== 'message') this.stopActivity(message.chatId);
    if (message.live && this.live && (await this.live.finish(message))) return;
    const audio = spokenAudio(message);
    if (audio) {
      const sent = await deliverVoice(this.out, message, audio);
      if (!sent)
        this.logger.info(
          { id: message.id, room: message.chatId },
          'matrix voice not sent: the room is encrypted',
        );
      return;
    }
    if (message.content.trim() === '') return;
    const total = await deliverMessage(this.out, message, this.progress.sent(message.id), (index) =>
      this.progress.record(message.id, index + 1),
    );
    this.progress.finish(message.id);
    this.logger.debug({ id: message.id, room: message.chatId, parts: total }, 'matrix message delivered');
  }

  /** Typing is per room (Matrix has no typing per thread). */
  startActivity(chatId: string): void {
    const client = this.connected?.client;
    if (!client) return;
    this.typing.start(chatId, () => client.sendTyping(chatId, true, 15_000));
  }

  stopActivity(chatId: string): void {
    if (!this.typing.isActive(chatId)) return;
    this.typing.stop(chatId);
    void this.connected?.client
      .sendTyping(chatId, false, 0)
      .catch((err: unknown) => this.logger.debug({ err: describeError(err) }, 'matrix typing not stopped'));
  }

  /** One sync: invitations, then each joined room's events in order. Rejects (position held) when one could not be taken. */
  private async onSync(sync: SyncResponse, first: boolean): Promise<void> {
    await this.crypto?.onSync(sync);
    for (const [roomId, invited] of Object.entries(sync.rooms?.invite ?? {}))
      await this.onInvite(roomId, invited.invite_state?.events ?? []);
    for (const [roomId, joined] of Object.entries(sync.rooms?.join ?? {})) {
      const timeline = (joined.timeline?.events ?? []).filter(isObject);
      this.learnRoom(roomId, joined, timeline);
      if (first) continue;
      for (const event of timeline) await this.onEvent(roomId, event);
    }
    await this.crypto?.save();
  }

  /** Joins when the inviter is allowed (the allow list or an approved pairing); others are ignored. */
  private async onInvite(roomId: string, state: unknown[]): Promise<void> {
    const me = this.connected?.userId;
    const invite = state
      .filter(isObject)
      .find(
        (e) =>
          e['type'] === 'm.room.member' &&
          e['state_key'] === me &&
          (e['content'] as RawEvent | undefined)?.['membership'] === 'invite',
      );
    const inviter = invite?.['sender'];
    if (typeof inviter !== 'string') return;
    if (!(await this.access.isAllowed(matrixSender(inviter)))) {
      this.logger.info({ room: roomId, inviter }, 'matrix invitation from someone not allowed: ignored');
      return;
    }
    try {
      await this.client.joinRoom(roomId);
      this.logger.info({ room: roomId, inviter }, 'matrix invitation accepted');
    } catch (err) {
      this.logger.warn({ room: roomId, err: describeError(err) }, 'matrix invitation not accepted');
    }
  }

  /** Member count and names from the sync's summary and member events. */
  private learnRoom(roomId: string, joined: JoinedRoom, timeline: RawEvent[]): void {
    let info = this.rooms.get(roomId);
    if (!info) {
      info = { members: undefined, names: new Map() };
      this.rooms.set(roomId, info);
    }
    const count = joined.summary?.['m.joined_member_count'];
    for (const event of [...(joined.state?.events ?? []).filter(isObject), ...timeline]) {
      if (event['type'] !== 'm.room.member' || typeof event['state_key'] !== 'string') continue;
      const name = (event['content'] as RawEvent | undefined)?.['displayname'];
      if (typeof name === 'string' && name !== '') info.names.set(event['state_key'], name.slice(0, 64));
      if (typeof count !== 'number') info.members = undefined; // membership changed: asked again when needed
    }
    if (typeof count === 'number' && count >= 0) info.members = count;
  }

  private async memberCount(roomId: string): Promise<number> {
    const info = this.rooms.get(roomId);
    if (info?.members !== undefined) return info.members;
    const joined = await this.client.getJoinedRoomMembers(roomId).catch(() => undefined);
    const count = joined ? Object.keys(joined.joined).length : 2;
    if (info) info.members = count;
    return count;
  }

  private async onEvent(roomId: string, event: RawEvent, decrypted = false): Promise<void> {
    const me = this.connected!.userId;
    if (event['sender'] === me && typeof event['event_id'] === 'string')
      this.own.set(event['event_id'], true);
    const names = this.rooms.get(roomId)?.names;
    const action = await decideEvent(roomId, event, {
      botUserId: me,
      botName: names?.get(me) ?? this.botName,
      access: this.access,
      memberCount: event['sender'] === me ? 2 : await this.memberCount(roomId),
      displayName: (id) => names?.get(id),
      isOwnEvent: (id) => this.own.get(id) === true,
    });
    switch (action.kind) {
      case 'ignore':
        this.logger.trace({ event: event['event_id'], reason: action.reason }, 'matrix event ignored');
        return;
      case 'encrypted': {
        if (this.crypto) {
          const clear = decrypted ? undefined : await this.crypto.decrypt(roomId, event);
          if (clear) await this.onEvent(roomId, clear, true);
          return;
        }
        if (await this.store.firstEncryptedNotice(roomId))
          await this.reply({ chatId: roomId }, ENCRYPTED_NOTICE);
        return;
      }
      case 'pairing':
        this.logger.info({ senderId: event['sender'] }, 'unknown matrix sender: pairing code sent');
        await this.reply(
          { chatId: roomId, ...(action.threadId ? { threadId: action.threadId } : {}) },
          pairingText(action.code),
        );
        return;
      case 'publish': {
        const target = { chatId: roomId, ...(action.threadId ? { threadId: action.threadId } : {}) };
        let media: Media[] | undefined;
        const accessToken = this.client.getAccessToken() ?? '';
        await intake(action.message, {
          publish: async (inbound) => {
            media ??= await refsToMedia(action.media, {
              downloadUrl: (mxc) =>
                this.client.mxcUrlToHttp(mxc, undefined, undefined, undefined, false, true, true),
              accessToken,
              maxBytes: this.deps.config.media.maxBytes,
              logger: this.logger,
            });
            await this.deps.bus.publishInbound({ ...inbound, media });
          },
          ...busIntakePorts(this.deps.bus),
          reply: (text) => this.reply(target, text),
        });
      }
    }
  }

  /** A short direct answer (pairing, an at-once command's, the encryption notice); failures are logged. */
  private async reply(target: MatrixTarget, text: string): Promise<void> {
    try {
      const id = await sendContent(
        this.out,
        target,
        inThread(plainContent(text), target),
        `reply:${crypto.randomUUID()}`,
      );
      this.own.set(id, true);
    } catch (err) {
      this.logger.warn({ room: target.chatId }, `matrix reply failed: ${describeError(err)}`);
    }
  }
}

/** A user or device id as a file name part. */
function safeName(id: string): string {
  return id.replace(/[^A-Za-z0-9._=-]/g, '_');
}

function isObject(value: unknown): value is RawEvent {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

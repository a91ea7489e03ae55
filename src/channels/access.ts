/**
 * Who may talk to the bot: the `*_ALLOW_FROM` list plus senders approved by
 * pairing. An unknown DM sender gets a short code; the owner runs
 * `magpie pairing approve <code>` and the sender is admitted (kept in Redis).
 *
 * Strangers cannot flood the owner or Redis: a sender keeps the same code
 * while it is pending and is sent it at most once per `repeatAfterSeconds`;
 * at most `maxPending` requests are pending at once (beyond that nothing is
 * stored and nothing is sent); every stored request expires on its own, and
 * expired codes are pruned on every new request, not only by `pairing list`.
 * The PairingStore (bus/pairing-store.ts in the daemon) decides and writes
 * each request atomically.
 */
import { randomInt } from 'node:crypto';
import type { PairingRequest, PairingStore } from '../bus/pairing-store.js';
import { AppError } from '../errors/index.js';

export type { PairingRequest, PairingStore } from '../bus/pairing-store.js';

/** The person behind a platform message. */
export interface Sender {
  id: string;
  username?: string;
  displayName?: string;
}

/** Characters of a pairing code: no 0/O, 1/I confusion. */
const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const CODE_LENGTH = 6;

/** Pending pairing requests kept at most, all channels together (the default of `maxPending`). */
export const DEFAULT_MAX_PENDING = 50;

/** Longest username or display name stored with a request; longer ones are cut. */
const MAX_NAME_LENGTH = 64;

export interface AccessControlOptions {
  /** Channel name (`telegram`, `discord`): approvals are per channel. */
  channel: string;
  /** Entries of `*_ALLOW_FROM`: `*`, sender ids, or `@usernames` (case-insensitive). */
  allowFrom: string[];
  /** Where requests and approvals are kept (shared by every gateway). */
  pairing: PairingStore;
  /** How long a pairing code stays valid. @defaultValue 3600 */
  codeTtlSeconds?: number;
  /** How long a pending sender who keeps writing waits before being sent their code again. @defaultValue 600 */
  repeatAfterSeconds?: number;
  /** Pending requests kept at most (all channels); strangers beyond it get nothing. @defaultValue {@link DEFAULT_MAX_PENDING} */
  maxPending?: number;
}

/**
 * What to do about an unknown sender: `send` the code now; stay `quiet` (they
 * were sent this code recently); or nothing at all when the pending requests
 * are `full` (nothing was stored for them).
 */
export type PairingOutcome =
  | { status: 'send'; code: string }
  | { status: 'quiet'; code: string }
  | { status: 'full' };

/** The access check shared by the Telegram and Discord adapters. */
export class AccessControl {
  private readonly channel: string;
  private readonly allowAll: boolean;
  private readonly allowIds: Set<string>;
  private readonly allowUsernames: Set<string>;
  private readonly pairing: PairingStore;
  private readonly ttlSeconds: number;
  private readonly repeatSeconds: number;
  private readonly maxPending: number;

  constructor(options: AccessControlOptions) {
    this.ttlSeconds = positive('codeTtlSeconds', options.codeTtlSeconds ?? 3600);
    this.repeatSeconds = positive('repeatAfterSeconds', options.repeatAfterSeconds ?? 600);
    this.maxPending = positive('maxPending', options.maxPending ?? DEFAULT_MAX_PENDING);
    this.channel = options.channel;
    this.pairing = options.pairing;
    const entries = options.allowFrom.map((e) => e.trim()).filter((e) => e !== '');
    this.allowAll = entries.includes('*');
    this.allowIds = new Set(entries.filter((e) => !e.startsWith('@')));
    this.allowUsernames = new Set(
      entries.filter((e) => e.startsWith('@')).map((e) => e.slice(1).toLowerCase()),
    );
  }

  /** True when the allow-list names the sender (or `*`), or the sender was approved by pairing. */
  async isAllowed(sender: Sender): Promise<boolean> {
    if (this.allowAll || this.allowIds.has(sender.id)) return true;
    if (sender.username && this.allowUsernames.has(sender.username.replace(/^@/, '').toLowerCase())) {
      return true;
    }
    return this.pairing.isApproved(this.channel, sender.id);
  }

  /**
   * An unknown sender wrote: their pairing code (a new one, or the same one
   * while it is pending; codes expire after `codeTtlSeconds`) and whether to
   * send it now (at most once per `repeatAfterSeconds`), or `full` when
   * `maxPending` requests are already pending.
   */
  async requestPairing(sender: Sender, chatId: string): Promise<PairingOutcome> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const code = newCode();
      const request: PairingRequest = {
        code,
        channel: this.channel,
        senderId: sender.id,
        chatId,
        createdAt: new Date().toISOString(),
        ...(sender.username ? { username: sender.username.slice(0, MAX_NAME_LENGTH) } : {}),
        ...(sender.displayName ? { displayName: sender.displayName.slice(0, MAX_NAME_LENGTH) } : {}),
      };
      const draw = await this.pairing.request(request, {
        ttlSeconds: this.ttlSeconds,
        repeatSeconds: this.repeatSeconds,
        maxPending: this.maxPending,
      });
      // 'taken': another pending request drew the same code; draw again
      if (draw.status !== 'taken') return draw;
    }
    throw new AppError('INTERNAL', 'no free pairing code after 5 draws');
  }
}

function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer`);
  return value;
}

function newCode(): string {
  let code = '';
  for (let i = 0; i < CODE_LENGTH; i++) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return code;
}

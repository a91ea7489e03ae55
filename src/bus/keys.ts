/**
 * Redis keys spelled in one place (BullMQ spells its queues' own keys): the
 * bus's mailboxes, running turns and pub/sub channels, helpers, the
 * operations view (per-turn figures, totals, worker heartbeats, token use),
 * pairing, and the scheduler's markers and lock.
 */

/** Redis keys of the bus under a prefix. */
export const keys = {
  mailbox: (prefix: string, sessionKey: string) => `${prefix}:mailbox:${sessionKey}`,
  /** The set of sessions whose mailbox holds entries (mailbox.ts): what the worker's sweep wakes. */
  pendingMailboxes: (prefix: string) => `${prefix}:mailboxes`,
  /** Set once the mailboxes of an older magpie were added to `pendingMailboxes` (mailbox.ts). */
  pendingMailboxesAdopted: (prefix: string) => `${prefix}:mailboxes-adopted`,
  /** Set for a day once an inbound message (by a hash of its id) reached a mailbox (mailbox.ts). */
  inboundSeen: (prefix: string, idHash: string) => `${prefix}:seen:${idHash}`,
  dead: (prefix: string) => `${prefix}:dead`,
  running: (prefix: string, sessionKey: string) => `${prefix}:running:${sessionKey}`,
  /** The attempt of a session's turn that may answer it (turn-fence.ts). */
  turnAttempt: (prefix: string, sessionKey: string) => `${prefix}:attempt:${sessionKey}`,
  /** Held by the attempt of a session's turn that is writing; claims wait for it (turn-fence.ts). */
  turnWriting: (prefix: string, sessionKey: string) => `${prefix}:attempt-writing:${sessionKey}`,
  /** Held while a scheduled task is added to a chat, so its limits are counted one add at a time (cron-store.ts). */
  cronAdd: (prefix: string, sessionKey: string) => `${prefix}:cron-add:${sessionKey}`,
  cancel: (prefix: string) => `${prefix}:cancel`,
  activity: (prefix: string, channel: string) => `${prefix}:activity:${channel}`,
  /** Pub/sub of a channel's live reply snapshots (live.ts). */
  live: (prefix: string, channel: string) => `${prefix}:live:${channel}`,
  /** What a channel showed of a turn's live reply (JSON, expiring): see live-records.ts. */
  liveRecord: (prefix: string, channel: string, turn: string) => `${prefix}:live-record:${channel}:${turn}`,
  cliReply: (prefix: string, address: string) => `${prefix}:cli:${address}`,
  /** A CLI request's replies, JSON OutboundMessages oldest first (expiring): see reply-lists.ts. */
  cliReplies: (prefix: string, address: string) => `${prefix}:cli-replies:${address}`,
  /** A web chat's kept messages, a capped expiring stream (web-events.ts). */
  webEvents: (prefix: string, chat: string) => `${prefix}:web-events:${chat}`,
  /** A web chat's spoken replies, a capped expiring hash (web-audio.ts). */
  webAudio: (prefix: string, chat: string) => `${prefix}:web-audio:${chat}`,
  /** Pub/sub of everything a web chat's open pages receive (web-events.ts). */
  web: (prefix: string, chat: string) => `${prefix}:web:${chat}`,
  lastChannel: (prefix: string) => `${prefix}:state:last-channel`,
  /** A session's approval question (a hash: the record and its state), see approvals.ts. */
  approval: (prefix: string, sessionKey: string) => `${prefix}:approval:${sessionKey}`,
  /** Sessions with a question waiting, scored by when it expires (ms). */
  approvalsWaiting: (prefix: string) => `${prefix}:approvals`,
  /** A chat's "always allow" rules (a set of JSON rules). */
  approvalRules: (prefix: string, chatKey: string) => `${prefix}:approval-rules:${chatKey}`,
  /** How far the e-mail channel read a mailbox: a hash of `uidValidity` and `lastUid` (email-store.ts). */
  emailCursor: (prefix: string, mailbox: string) => `${prefix}:email-cursor:${mailbox}`,
  /** An e-mail thread's subject and references (JSON, expiring). */
  emailThread: (prefix: string, thread: string) => `${prefix}:email-thread:${thread}`,
  /** Mail the e-mail channel ignored, counted by reason (a hash). */
  emailIgnored: (prefix: string) => `${prefix}:email-ignored`,
  /** The Matrix channel's state per account or room: `sync` (next_batch), `device` (a hash), `encrypted-notice` (matrix-store.ts). */
  matrix: (prefix: string, kind: 'sync' | 'device' | 'encrypted-notice', id: string) =>
    `${prefix}:matrix-${kind}:${id}`,
  /** One message WhatsApp was asked to send: a hash of each status Meta reported (`sent`, `delivered`, `read`, `failed`) → when (ms), expiring (whatsapp-store.ts). */
  whatsappStatus: (prefix: string, messageId: string) => `${prefix}:whatsapp-status:${messageId}`,
  /** The WhatsApp status callbacks recorded, counted by status (a hash). */
  whatsappStatuses: (prefix: string) => `${prefix}:whatsapp-statuses`,
  /**
   * Sends a platform accepted and later reported failed (a WhatsApp `failed` status), newest first:
   * a capped list of DeliveryFailure JSON that `magpie status` lists with the errors (delivery-failures.ts).
   */
  deliveryFailures: (prefix: string) => `${prefix}:delivery-failures`,
  /** The id of the workspace this bus serves, set by the first process that starts (workspace/identity.ts). */
  workspace: (prefix: string) => `${prefix}:workspace`,
};

/**
 * Pub/sub names under the prefix that channels use through `bus.publish` /
 * `bus.subscribe` (which add the prefix).
 */
export const channelNames = {
  /** Every message to a CLI chat, for an open `magpie chat` (reminders, helper results). */
  cliChat: (chatId: string) => `cli-chat:${chatId}`,
  /** Live snapshots for one waiting CLI request. */
  cliLive: (address: string) => `cli-live:${address}`,
};

/** Keys of the models' state under a prefix. */
export const modelKeys = {
  /** One model's (or endpoint's) cool-down: a hash with a TTL (cooldown-store.ts). */
  cooldown: (prefix: string, key: string) => `${prefix}:cooldown:${key}`,
  /** The hash of each chat's `/model` choice. */
  choices: (prefix: string) => `${prefix}:chat-models`,
};

/** The start of the keys of BullMQ's outbound queues under a prefix (`<prefix>:outbound-<channel>:…`). */
export function outboundQueueKeyHead(prefix: string): string {
  return `${prefix}:outbound-`;
}

/** Redis keys of helpers under a prefix. */
export const helperKeys = {
  /** Hash of running helpers: id → HelperRecord JSON (read by `magpie status`). */
  running: (prefix: string) => `${prefix}:helpers`,
  /** Set once a helper's result was published, so a redone job does not publish it twice. */
  published: (prefix: string, id: string) => `${prefix}:helper-published:${id}`,
};

/** Keys of the operations view under a prefix. */
export const opsKeys = {
  /** Stream of finished turns (XADD MAXLEN ~ 1000), field `turn` = TurnRecord JSON. */
  turns: (prefix: string) => `${prefix}:turns`,
  /** Hash of running totals since the first turn (counters for /metrics): see {@link totalsFields}. */
  totals: (prefix: string) => `${prefix}:turn-totals`,
  /** One key per live worker process, with a TTL: WorkerBeat JSON. */
  worker: (prefix: string, id: string) => `${prefix}:workers:${id}`,
  /** Hash of one day's token use (`<session>|<kind>` and `*|<kind>` fields), expiring: see usage-records.ts. */
  usageDay: (prefix: string, date: string) => `${prefix}:usage:day:${date}`,
  /** Hash of each session's token use since its first turn (`<session>|<kind>` fields). */
  usageSessions: (prefix: string) => `${prefix}:usage:sessions`,
  /** Hash of a day's limit counters (reservations in flight included): see budget-store.ts. */
  budgetDay: (prefix: string, date: string) => `${prefix}:budget:day:${date}`,
  /** Hash of a month's limit counters. */
  budgetMonth: (prefix: string, month: string) => `${prefix}:budget:month:${month}`,
  /** A chat's model calls in one minute (a counter with a TTL). */
  budgetRate: (prefix: string, session: string, minute: string) =>
    `${prefix}:budget:rate:${session}:${minute}`,
  /** Hash of a day's settled spend (`<scope>|<kind>` fields): see budget-store.ts. */
  spendDay: (prefix: string, date: string) => `${prefix}:spend:day:${date}`,
  /** The pattern matching every worker heartbeat key. */
  workerPattern: (prefix: string) => `${prefix}:workers:*`,
};

/** Finished turns kept in the stream (approximately). */
export const TURNS_STREAM_MAXLEN = 1000;

/** Upper bounds (seconds) of the turn latency histogram's buckets. */
export const LATENCY_BUCKETS_S = [0.5, 1, 2, 5, 10, 30, 60, 120, 300] as const;

/** Field names of the totals hash. */
export const totalsFields = {
  outcome: (outcome: string) => `outcome:${outcome}`,
  promptTokens: 'tokens:prompt',
  cachedTokens: 'tokens:cached',
  cacheWriteTokens: 'tokens:cache_write',
  completionTokens: 'tokens:completion',
  toolCalls: 'tools:calls',
  toolFailures: 'tools:failed',
  llmCalls: 'llm:calls',
  /** LLM calls answered by a fallback model. */
  fallbacks: 'llm:fallbacks',
  /** LLM calls answered by one model (its configured id). */
  modelCalls: (model: string) => `llm:model:${model}`,
  latencyCount: 'latency:count',
  latencySumMs: 'latency:sum_ms',
  latencyBucket: (le: number) => `latency:le:${le}`,
  /** Approval questions asked, and how they were settled (allowed, denied, timeout, cancelled). */
  approvals: (decision: string) => `approvals:${decision}`,
};

/** Pairing keys under a prefix (see pairing-store.ts). */
export function pairingKeys(prefix: string) {
  const codePrefix = `${prefix}:pairing:code:`;
  return {
    /** The PairingRequest JSON of a code, expiring after the code's TTL. */
    code: (code: string) => `${codePrefix}${code}`,
    /** What every code key starts with (the request script checks a pending code's key). */
    codePrefix,
    /** A sender's pending code. */
    pending: (channel: string, senderId: string) => `${prefix}:pairing:pending:${channel}:${senderId}`,
    /** Set while a sender was told their code recently. */
    notified: (channel: string, senderId: string) => `${prefix}:pairing:notified:${channel}:${senderId}`,
    /** Sorted set of pending codes by expiry time. */
    codes: `${prefix}:pairing:codes`,
    /** Set of approved sender ids of a channel. */
    approved: (channel: string) => `${prefix}:pairing:approved:${channel}`,
  };
}

/** Keys of the scheduler under a prefix. */
export const schedulerKeys = {
  /** Set once a scheduled job's message was published, so a redone job does not publish it twice. */
  fired: (prefix: string, jobId: string) => `${prefix}:scheduler:fired:${jobId}`,
  /** The heartbeat's lock: one worker runs a heartbeat at a time. */
  heartbeatLock: (prefix: string) => `${prefix}:scheduler:heartbeat-lock`,
};

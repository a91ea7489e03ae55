/**
 * Approval questions and "always allow" rules in Redis. A session has at most
 * one question waiting: a hash holding the record (JSON, written once) and
 * its state, which only the scripts below change, each in one step, so two
 * answers (two buttons, a button and a typed code, two gateways) settle it
 * once and the call runs at most once (`claim`: allowed → running; a crash
 * while running leaves `running`, which is never run again).
 */
import type { Redis } from 'ioredis';
import {
  type AnswerOutcome,
  type ApprovalAnswer,
  type ApprovalRule,
  ApprovalRuleSchema,
  type ApprovalState,
  type PendingApproval,
  PendingApprovalSchema,
} from '../messages/approval.js';
import { shortHash } from '../messages/short-hash.js';
import { safeJson } from './json-topic.js';
import { keys, opsKeys, totalsFields } from './keys.js';
import { type LuaScript, runScript } from './lua.js';
import { SEEN_TTL_S } from './mailbox.js';
import { scanKeys } from './redis.js';

/**
 * KEYS: the question, the totals hash; ARGV: code, decision (allowed|denied), who (id), who (name), always (0|1), now (ISO).
 * Returns {outcome, state, decidedBy}: decided | none | already | not-allowed | expired.
 */
const ANSWER: LuaScript = {
  name: 'approvalAnswer',
  keys: 2,
  lua: `
local h = redis.call('HMGET', KEYS[1], 'code', 'state', 'decidedBy', 'approvers', 'expiresAt')
if not h[1] or h[1] ~= ARGV[1] then return {'none'} end
if h[2] ~= 'waiting' then return {'already', h[2], h[3] or ''} end
if h[5] < ARGV[6] then return {'expired'} end
local approvers = cjson.decode(h[4])
if #approvers > 0 then
  local ok = false
  for _, id in ipairs(approvers) do if id == ARGV[3] then ok = true end end
  if not ok then return {'not-allowed'} end
end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'decidedBy', ARGV[4], 'always', ARGV[5])
redis.call('HINCRBY', KEYS[2], 'approvals:' .. ARGV[2], 1)
return {'decided', ARGV[2], ARGV[4]}`,
};

/** KEYS: the question, the totals hash; ARGV: code, from-state, to-state, who. Moves the state when it is from-state; returns the state it found. */
const MOVE: LuaScript = {
  name: 'approvalMove',
  keys: 2,
  lua: `
local h = redis.call('HMGET', KEYS[1], 'code', 'state')
if not h[1] or h[1] ~= ARGV[1] then return false end
if h[2] == ARGV[2] then
  redis.call('HSET', KEYS[1], 'state', ARGV[3], 'decidedBy', ARGV[4])
  if ARGV[3] == 'timeout' or ARGV[3] == 'cancelled' then redis.call('HINCRBY', KEYS[2], 'approvals:' .. ARGV[3], 1) end
end
return h[2]`,
};

/** KEYS: the question, the waiting set; ARGV: code, session. Removes it when the code matches. */
const MARK_ASKED: LuaScript = {
  name: 'approvalMarkAsked',
  keys: 1,
  lua: `if redis.call('HGET', KEYS[1], 'code') == ARGV[1] then redis.call('HSET', KEYS[1], 'asked', '1') end`,
};

const FINISH: LuaScript = {
  name: 'approvalFinish',
  keys: 2,
  lua: `
if redis.call('HGET', KEYS[1], 'code') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 1`,
};

/** A question as stored, with its current state. */
export type StoredApproval = PendingApproval;

export class RedisApprovals {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** Stores a new question (replacing a finished one of the session). */
  async park(pending: PendingApproval): Promise<void> {
    const key = keys.approval(this.prefix, pending.sessionKey);
    await this.redis
      .multi()
      .del(key)
      .hset(key, {
        record: JSON.stringify(pending),
        code: pending.code,
        state: pending.state,
        approvers: JSON.stringify(pending.approvers),
        expiresAt: pending.expiresAt,
      })
      .zadd(keys.approvalsWaiting(this.prefix), Date.parse(pending.expiresAt), pending.sessionKey)
      .hincrby(opsKeys.totals(this.prefix), totalsFields.approvals('asked'), 1)
      .exec();
  }

  /** The session's question with its current state, or undefined. */
  async get(sessionKey: string): Promise<StoredApproval | undefined> {
    const [record, state, decidedBy, always, asked] = await this.redis.hmget(
      keys.approval(this.prefix, sessionKey),
      'record',
      'state',
      'decidedBy',
      'always',
      'asked',
    );
    if (!record) return undefined;
    const parsed = PendingApprovalSchema.safeParse(safeJson(record));
    if (!parsed.success) return undefined;
    return {
      ...parsed.data,
      state: (state as ApprovalState | null) ?? parsed.data.state,
      ...(decidedBy ? { decidedBy } : {}),
      ...(always === '1' ? { always: true } : {}),
      ...(asked === '1' ? { asked: true } : {}),
    };
  }

  /** Settles the session's question with a person's answer, once. */
  async answer(sessionKey: string, answer: ApprovalAnswer, now = new Date()): Promise<AnswerOutcome> {
    if (answer.messageId !== undefined) {
      // The mailbox's own "seen" marker: a message is taken once, whether it is a turn's or an answer.
      const seen = keys.inboundSeen(this.prefix, shortHash(answer.messageId, 32));
      if ((await this.redis.set(seen, '1', 'EX', SEEN_TTL_S, 'NX')) === null) return { kind: 'repeat' };
    }
    const state = answer.decision === 'deny' ? 'denied' : 'allowed';
    const result = (await runScript(
      this.redis,
      ANSWER,
      keys.approval(this.prefix, sessionKey),
      opsKeys.totals(this.prefix),
      answer.code,
      state,
      answer.senderId,
      answer.senderName,
      answer.decision === 'always' ? '1' : '0',
      now.toISOString(),
    )) as string[];
    const [outcome, found, by] = result;
    if (outcome === 'decided') {
      const pending = await this.get(sessionKey);
      if (!pending) return { kind: 'none' };
      if (answer.decision === 'always' && pending.rule)
        await this.addRule(chatKeyOfPending(pending), pending.rule);
      return { kind: 'decided', pending };
    }
    if (outcome === 'already') return { kind: 'already', state: found as ApprovalState, by: by || undefined };
    if (outcome === 'not-allowed') return { kind: 'not-allowed' };
    if (outcome === 'expired') return { kind: 'expired' };
    return { kind: 'none' };
  }

  /**
   * Moves the question `code` from `from` to `to` (timeout, /stop, allowed → running). Resolves
   * the state it found (undefined: no such question), so the caller knows whether it moved it.
   */
  async move(
    sessionKey: string,
    code: string,
    from: ApprovalState,
    to: ApprovalState,
    by: string,
  ): Promise<ApprovalState | undefined> {
    const found = await runScript(
      this.redis,
      MOVE,
      keys.approval(this.prefix, sessionKey),
      opsKeys.totals(this.prefix),
      code,
      from,
      to,
      by,
    );
    return typeof found === 'string' ? (found as ApprovalState) : undefined;
  }

  /** Notes that the question `code` was sent to its chat (a question stored but not yet sent is sent again). */
  async markAsked(sessionKey: string, code: string): Promise<void> {
    await runScript(this.redis, MARK_ASKED, keys.approval(this.prefix, sessionKey), code);
  }

  /** Removes the question `code` once its turn went on. */
  async finish(sessionKey: string, code: string): Promise<void> {
    await runScript(
      this.redis,
      FINISH,
      keys.approval(this.prefix, sessionKey),
      keys.approvalsWaiting(this.prefix),
      code,
      sessionKey,
    );
  }

  /** Every stored question, soonest to expire first (status, dashboard). */
  async list(): Promise<StoredApproval[]> {
    const sessions = await this.redis.zrange(keys.approvalsWaiting(this.prefix), '0', '-1');
    const found = await Promise.all(sessions.map((s) => this.get(s)));
    return found.filter((p): p is StoredApproval => p !== undefined);
  }

  /** A chat's "always allow" rules. */
  async rules(chatKey: string): Promise<ApprovalRule[]> {
    const raw = await this.redis.smembers(keys.approvalRules(this.prefix, chatKey));
    return raw
      .map((r) => ApprovalRuleSchema.safeParse(safeJson(r)))
      .filter((r) => r.success)
      .map((r) => r.data)
      .sort((a, b) => ruleText(a).localeCompare(ruleText(b)));
  }

  /** Adds a rule to a chat (a rule already there stays one). */
  async addRule(chatKey: string, rule: ApprovalRule): Promise<void> {
    await this.redis.sadd(keys.approvalRules(this.prefix, chatKey), canonical(rule));
  }

  /** Removes a rule; true when it was there. */
  async removeRule(chatKey: string, rule: ApprovalRule): Promise<boolean> {
    return (await this.redis.srem(keys.approvalRules(this.prefix, chatKey), canonical(rule))) === 1;
  }

  /** Every chat's rules (`magpie approvals list`). */
  async allRules(): Promise<Array<{ chat: string; rules: ApprovalRule[] }>> {
    const base = keys.approvalRules(this.prefix, '');
    const chats = (await scanKeys(this.redis, `${base}*`)).map((k) => k.slice(base.length));
    const out = await Promise.all(
      [...new Set(chats)].sort().map(async (chat) => ({ chat, rules: await this.rules(chat) })),
    );
    return out.filter((c) => c.rules.length > 0);
  }
}

/** One spelling of a rule, so a set holds it once. */
function canonical(rule: ApprovalRule): string {
  return JSON.stringify(
    rule.prefix === undefined ? { tool: rule.tool } : { tool: rule.tool, prefix: rule.prefix },
  );
}

const ruleText = (rule: ApprovalRule) => `${rule.tool} ${rule.prefix ?? ''}`;

/** The chat whose rules an "always" answer adds to: the one the turn answers (not where the question was asked). */
export function chatKeyOfPending(pending: PendingApproval): string {
  const { request } = pending.parked;
  return `${request.channel}:${request.chatId}`;
}

/**
 * What the worker records about turns, and how any process reads it back:
 * finished turns in a capped stream, running turns as bus/running-turns.ts
 * keeps them. Readers skip malformed entries rather than fail (the status
 * view shows what it can).
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { opsKeys } from './keys.js';
import { RedisRunningTurns, type RunningTurn } from './running-turns.js';

export type { RunningTurn } from './running-turns.js';

/** A model or tool call of the turn: when it began (ms after the turn started) and how long it took. */
export const TurnStepSchema = z.object({
  kind: z.enum(['model', 'tool']),
  name: z.string(),
  at: z.number(),
  ms: z.number(),
  ok: z.boolean(),
  tokens: z.object({ input: z.number(), cached: z.number(), output: z.number() }).optional(),
  fallback: z.boolean().optional(),
});

/**
 * When the turn's steps happened (ms since the epoch), for the dashboard's timeline: the head
 * message's receipt, the turn's start, the approval question it resumed after, its steps, and
 * `at` (the record's time) when the reply was queued.
 */
export const TurnTimelineSchema = z.object({
  receivedAt: z.number(),
  startedAt: z.number(),
  /** A resumed turn: when its question was asked (the wait ran to `startedAt`). */
  askedAt: z.number().optional(),
  steps: z.array(TurnStepSchema).default([]),
});
export type TurnTimeline = z.infer<typeof TurnTimelineSchema>;

export const TurnRecordSchema = z.object({
  /** The worker's turn id (session + first message). */
  turn: z.string(),
  session: z.string(),
  worker: z.string(),
  /** When the turn ended (ms since the epoch). */
  at: z.number(),
  wallMs: z.number(),
  llmCalls: z.number(),
  /** Prompt tokens, cached ones included. */
  promptTokens: z.number(),
  /** Prompt tokens the provider served from its cache (0 in records written before it was recorded). */
  cachedTokens: z.number().default(0),
  /** Prompt tokens written to the provider's cache. */
  cacheWriteTokens: z.number().default(0),
  completionTokens: z.number(),
  toolCalls: z.array(z.object({ name: z.string(), ms: z.number(), ok: z.boolean() })),
  outcome: z.string(),
  /** The model (configured id) that gave the turn's last answer, when known. */
  model: z.string().optional(),
  /** LLM calls of the turn answered by a fallback model (not the chat's first choice). */
  fallbacks: z.number().default(0),
  /** LLM calls by the model that answered them. */
  models: z.record(z.string(), z.number()).default({}),
  /** One line describing a failed turn (never a secret: the same text the user is told). */
  error: z.string().optional(),
  /** The turn's steps in time (records written before timelines were kept have none). */
  timeline: TurnTimelineSchema.optional(),
});

/** The figures of one finished turn, as stored in `<prefix>:turns`. */
export type TurnRecord = z.infer<typeof TurnRecordSchema>;

/** A stored turn plus its stream id. */
export type StoredTurn = TurnRecord & { id: string };

/** The newest `count` finished turns, newest first. */
export async function readTurns(redis: Redis, prefix: string, count = 50): Promise<StoredTurn[]> {
  const entries = await redis.xrevrange(opsKeys.turns(prefix), '+', '-', 'COUNT', count);
  const out: StoredTurn[] = [];
  for (const [id, fields] of entries) {
    const index = fields.indexOf('turn');
    const parsed = TurnRecordSchema.safeParse(parseJson(fields[index + 1]));
    if (index >= 0 && parsed.success) out.push({ ...parsed.data, id });
  }
  return out;
}

/** Every running turn, oldest first. */
export function readRunning(redis: Redis, prefix: string): Promise<RunningTurn[]> {
  return new RedisRunningTurns(redis, prefix).list();
}

/** JSON.parse that yields undefined for text that is not JSON. */
export function parseJson(raw: string | undefined): unknown {
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw);
  } catch (_err) {
    return undefined; // not JSON: the schema check that follows rejects it
  }
}

/**
 * The model side of the composition root: a provider for every configured
 * model, made by its kind's factory (src/providers/registry.ts) (MAGPIE_MODEL, then MAGPIE_FALLBACK_MODELS), each
 * with its own endpoint and key, behind one FallbackProvider whose cool-downs
 * live in the given store (Redis in the daemon, memory for `magpie agent`).
 */
import { visionCapable } from '../agent/model-vision.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../log/index.js';
import { type CooldownStore, MemoryCooldownStore } from '../providers/cooldown.js';
import { type FallbackModel, FallbackProvider } from '../providers/fallback.js';
import { createModelProvider } from '../providers/registry.js';
import type { LLMProvider } from '../providers/types.js';

/** The cap of any one retry delay of the OpenAI provider (its default). */
const RETRY_MAX_MS = 8_000;
/** The longest cool-down. */
const MAX_COOLDOWN_MS = 600_000;

/**
 * Builds the provider turns use. Loaded lazily by callers; each kind's SDK
 * (openai) loads only through the registry.
 *
 * @param cooldowns @defaultValue a MemoryCooldownStore (one process)
 * @example const provider = await buildProvider(config, logger, new RedisCooldownStore(redis, prefix));
 */
export async function buildProvider(
  config: Config,
  logger: Logger,
  cooldowns: CooldownStore = new MemoryCooldownStore(),
): Promise<LLMProvider> {
  const { llm } = config;
  const models: FallbackModel[] = await Promise.all(
    llm.models.map(async (m, i) => ({
      id: m.id,
      model: m.model,
      baseURL: m.baseURL,
      vision: visionCapable(m.model, config.vision),
      provider: await createModelProvider({
        endpoint: m,
        timeoutMs: llm.timeoutMs,
        maxRetries: llm.maxRetries,
        promptCache: llm.promptCache,
        ...(llm.transcribeModel ? { transcribeModel: llm.transcribeModel } : {}),
        primary: i === 0,
        logger,
      }),
    })),
  );
  return new FallbackProvider({
    models,
    cooldowns,
    cooldown: { baseMs: llm.cooldownMs, maxMs: Math.max(llm.cooldownMs, MAX_COOLDOWN_MS) },
    // A call with all its retries; another worker may try the model after this.
    probeMs: (llm.maxRetries + 1) * (llm.timeoutMs + RETRY_MAX_MS),
    logger,
  });
}

/** Whether any configured model takes images (MCP tools then attach theirs; text-only models get a note). */
export function anyModelSees(config: Config): boolean {
  return config.llm.models.some((m) => visionCapable(m.model, config.vision));
}

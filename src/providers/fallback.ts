/**
 * The FallbackProvider: one LLMProvider over an ordered list of models, each
 * on its own OpenAI-compatible endpoint. A call goes to the first model (or
 * the one the chat picked), and moves on within the same call when a model is
 * unavailable (see fallback-failures.ts) — never after text was streamed to
 * the user. A model that failed is left alone for a cool-down shared through
 * a CooldownStore (Redis across workers): its endpoint when it could not be
 * reached, the model alone when it answered with an error. Models that take
 * no images get a note in place of each image.
 */
import { AppError, ConfigError, describeError } from '../errors/index.js';
import { type Logger, silentLogger } from '../log/index.js';
import {
  type CooldownCheck,
  type CooldownEntry,
  type CooldownPolicy,
  type CooldownStore,
  cooldownKeys,
  DEFAULT_COOLDOWN,
} from './cooldown.js';
import { DeltaWatch } from './delta-watch.js';
import { type ModelFailure, ModelsUnavailableError, shortReasonOf, verdictOn } from './fallback-failures.js';
import { withoutImages } from './fallback-images.js';
import type {
  AudioFile,
  ChatRequest,
  ChatResponse,
  LLMProvider,
  ModelAvailability,
  ModelInfo,
} from './types.js';

/** One configured model and the provider that calls its endpoint. */
export interface FallbackModel extends ModelInfo {
  /** Calls this model's endpoint (its key, time-out and retries). */
  provider: LLMProvider;
}

export interface FallbackProviderOptions {
  /** The models in fallback order; the first is the default. Ids must be unique. */
  models: readonly FallbackModel[];
  /** Where cool-downs are kept (Redis in the daemon, memory for `magpie agent`). */
  cooldowns: CooldownStore;
  /** @defaultValue {@link DEFAULT_COOLDOWN} (30 s doubling, at most 10 min) */
  cooldown?: Partial<CooldownPolicy>;
  /**
   * How long a call that tries a model after its cool-down may take before another caller may try it too.
   * @defaultValue 120_000
   */
  probeMs?: number;
  /** @defaultValue a silent logger */
  logger?: Logger;
}

interface Candidate {
  info: FallbackModel;
  keys: { endpoint: string; model: string };
}

/**
 * Falls back from model to model.
 *
 * @example
 * const provider = new FallbackProvider({ models: [primary, local], cooldowns: new MemoryCooldownStore() });
 * const reply = await provider.chat({ messages, model: 'llama3.1' }); // llama3.1 first, then the others
 */
export class FallbackProvider implements LLMProvider {
  readonly model: string;
  readonly models: readonly ModelInfo[];
  readonly #candidates: readonly Candidate[];
  readonly #cooldowns: CooldownStore;
  readonly #policy: CooldownPolicy;
  readonly #probeMs: number;
  readonly #logger: Logger;

  constructor(options: FallbackProviderOptions) {
    const first = options.models[0];
    if (!first) throw new ConfigError('FallbackProvider needs at least one model');
    const ids = new Set(options.models.map((m) => m.id));
    if (ids.size !== options.models.length)
      throw new ConfigError('FallbackProvider: model ids must be unique');
    this.#policy = { ...DEFAULT_COOLDOWN, ...options.cooldown };
    const { baseMs, maxMs } = this.#policy;
    if (!(baseMs > 0) || !(maxMs >= baseMs)) {
      throw new ConfigError(`cool-down must be above 0 and at most its cap, got ${baseMs} ms / ${maxMs} ms`);
    }
    this.#probeMs = options.probeMs ?? 120_000;
    if (!(this.#probeMs > 0)) throw new ConfigError(`probeMs must be above 0, got ${this.#probeMs}`);
    this.model = first.model;
    this.#candidates = options.models.map((info) => ({ info, keys: cooldownKeys(info.baseURL, info.model) }));
    this.models = options.models.map(({ id, model, baseURL, vision }) => ({ id, model, baseURL, vision }));
    this.#cooldowns = options.cooldowns;
    this.#logger = (options.logger ?? silentLogger()).child({ component: 'fallback' });
  }

  /** One chat completion from the first model of the call's order that answers. */
  async chat(request: ChatRequest): Promise<ChatResponse> {
    const order = this.#order(request.model);
    // One model alone is called as before: no cool-downs, its own errors, images as sent.
    if (order.length === 1) return this.#callOne(order[0]!, request, 0, { later: false, alone: true });
    const failures: ModelFailure[] = [];
    const deltas = new DeltaWatch(request.onDelta);
    for (const [position, candidate] of order.entries()) {
      const keys = [candidate.keys.endpoint, candidate.keys.model];
      const check = await this.#claim(keys);
      if (check.state === 'cooling') {
        failures.push({ model: candidate.info, cooling: check.entry });
        continue;
      }
      const later = await this.#anyAvailable(order.slice(position + 1));
      try {
        const response = await this.#callOne(candidate, { ...request, onDelta: deltas.forward }, position, {
          later,
          alone: false,
        });
        if (check.state === 'probe') await this.#settle('succeeded', keys);
        if (position > 0) {
          this.#logger.info(
            { model: candidate.info.id, fallbacks: position },
            'answered by a fallback model',
          );
        }
        return response;
      } catch (err) {
        const verdict = verdictOn(err, position);
        if (verdict === 'cancelled' || request.signal?.aborted) {
          if (check.state === 'probe') await this.#settle('release', keys);
          throw err;
        }
        if (deltas.streamed || verdict === 'stop' || verdict === 'too-long') {
          // The endpoint answered: whatever failed before, it is up.
          if (check.state === 'probe') await this.#settle('succeeded', keys);
          if (deltas.streamed || verdict === 'stop') throw err;
          failures.push({ model: candidate.info, error: err as AppError });
          continue;
        }
        await this.#coolDown(candidate, err as AppError, check);
        failures.push({ model: candidate.info, error: err as AppError });
        const next = order[position + 1];
        this.#logger.warn(
          { model: candidate.info.id, code: (err as AppError).code, next: next?.info.id ?? null },
          `model ${candidate.info.id} failed: ${describeError(err)}`,
        );
      }
    }
    const tooLong = failures.find((f) => 'error' in f && f.error.code === 'CONTEXT_LENGTH_EXCEEDED');
    // Some model could answer a shorter conversation: let the agent compact and call again.
    if (tooLong && 'error' in tooLong) throw tooLong.error;
    throw new ModelsUnavailableError(failures);
  }

  async nextModel(model?: string): Promise<ModelInfo> {
    const order = this.#order(model);
    if (order.length > 1) {
      for (const candidate of order) {
        const blocking = await this.#peek([candidate.keys.endpoint, candidate.keys.model]);
        if (!blocking) return this.#info(candidate);
      }
    }
    return this.#info(order[0]!);
  }

  async availability(): Promise<ModelAvailability[]> {
    return Promise.all(
      this.#candidates.map(async (c) => {
        const entry =
          this.#candidates.length > 1 ? await this.#peek([c.keys.endpoint, c.keys.model]) : undefined;
        const model = this.#info(c);
        if (!entry) return { model };
        return { model, cooling: { leftMs: entry.leftMs, failures: entry.failures, reason: entry.reason } };
      }),
    );
  }

  /** The default model's endpoint lists its models. */
  async listModels(signal?: AbortSignal): Promise<string[]> {
    const primary = this.#candidates[0]!.info.provider;
    if (!primary.listModels) return [];
    return primary.listModels(signal);
  }

  /** Speech to text on the default model's endpoint. */
  async transcribe(audio: AudioFile, signal?: AbortSignal): Promise<string> {
    const primary = this.#candidates[0]!.info.provider;
    if (!primary.transcribe) {
      throw new AppError('CONFIG_INVALID', 'the default model endpoint does not transcribe speech');
    }
    return primary.transcribe(audio, signal);
  }

  /**
   * The call's order: `model` (an id) first, then the rest as configured. A name
   * that is no configured id is sent to the default endpoint, then the rest follow.
   */
  #order(model: string | undefined): Candidate[] {
    const all = [...this.#candidates];
    if (model === undefined) return all;
    const chosen = all.find((c) => c.info.id === model);
    if (chosen) return [chosen, ...all.filter((c) => c !== chosen)];
    const primary = all[0]!.info;
    const adHoc: FallbackModel = { ...primary, id: model, model };
    return [{ info: adHoc, keys: cooldownKeys(primary.baseURL, model) }, ...all];
  }

  /**
   * Calls one model: `later` another model can answer if this one fails (fail fast); `alone` it is
   * the only model, sent images as they are (its abilities are the operator's call, as before).
   */
  async #callOne(
    candidate: Candidate,
    request: ChatRequest,
    position: number,
    how: { later: boolean; alone: boolean },
  ): Promise<ChatResponse> {
    const { info } = candidate;
    const seesImages = info.vision || how.alone;
    const response = await info.provider.chat({
      ...request,
      model: info.model,
      messages: seesImages ? request.messages : withoutImages(request.messages, info.id),
      ...(how.later ? { failFast: true } : {}),
    });
    return { ...response, answeredBy: { model: info.id, fallbacks: position } };
  }

  /** Records the failure: the endpoint when it could not be reached, else this model on it. */
  async #coolDown(candidate: Candidate, err: AppError, check: CooldownCheck): Promise<void> {
    const unreachable = err.code === 'PROVIDER_UNREACHABLE';
    const key = unreachable ? candidate.keys.endpoint : candidate.keys.model;
    const label = unreachable
      ? `${candidate.info.baseURL} (every model there)`
      : `${candidate.info.id} at ${candidate.info.baseURL}`;
    const retryAfterMs = 'retryAfterMs' in err && typeof err.retryAfterMs === 'number' ? err.retryAfterMs : 0;
    try {
      const entry = await this.#cooldowns.failed(
        key,
        { label, reason: describeError(err), short: shortReasonOf(err), retryAfterMs },
        this.#policy,
      );
      this.#logger.warn(
        { model: candidate.info.id, cooldownMs: entry.leftMs, failures: entry.failures },
        `${label} is left alone for ${Math.ceil(entry.leftMs / 1000)}s`,
      );
      // An endpoint that answered is up: only the model cools down.
      if (!unreachable && check.state === 'probe') await this.#cooldowns.succeeded([candidate.keys.endpoint]);
      else if (check.state === 'probe') await this.#cooldowns.release([candidate.keys.model]);
    } catch (storeErr) {
      this.#logger.warn({ err: describeError(storeErr) }, 'could not record a cool-down');
    }
  }

  /** A cool-down store that cannot be read never stops a call: the model is tried. */
  async #claim(keys: string[]): Promise<CooldownCheck> {
    try {
      return await this.#cooldowns.claim(keys, this.#probeMs);
    } catch (err) {
      this.#logger.warn({ err: describeError(err) }, 'could not read cool-downs; trying the model');
      return { state: 'free' };
    }
  }

  async #peek(keys: string[]): Promise<CooldownEntry | undefined> {
    try {
      return await this.#cooldowns.peek(keys);
    } catch (err) {
      this.#logger.debug({ err: describeError(err) }, 'could not read cool-downs');
      return undefined;
    }
  }

  /** True when a model of `rest` is not cooling down (so this one need not be waited on). */
  async #anyAvailable(rest: Candidate[]): Promise<boolean> {
    for (const c of rest) if (!(await this.#peek([c.keys.endpoint, c.keys.model]))) return true;
    return false;
  }

  async #settle(how: 'succeeded' | 'release', keys: string[]): Promise<void> {
    try {
      await this.#cooldowns[how](keys);
    } catch (err) {
      this.#logger.warn({ err: describeError(err) }, 'could not update a cool-down');
    }
  }

  #info(candidate: Candidate): ModelInfo {
    const { id, model, baseURL, vision } = candidate.info;
    return { id, model, baseURL, vision };
  }
}

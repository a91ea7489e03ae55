/**
 * An LLMProvider that holds every call to the limits (the outermost layer,
 * over FallbackProvider, so chats, summaries, helpers, heartbeat and cron all
 * pass it): before the call it reserves the estimated cost (the prompt as
 * counted, the output at `maxTokens` or {@link DEFAULT_OUTPUT_TOKENS}) at the
 * prices of the model the call goes to first; after it, it settles to the
 * reported use at the prices of the model that answered; a failed call gives
 * its reservation back. A refused call throws BudgetError with the chat's line.
 */
import { estimateTokens } from '../agent/summarize.js';
import { priceOf } from '../config/budget.js';
import { BudgetError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { toNano } from '../messages/budget.js';
import { estimateCost, type TokenCounts } from '../messages/token-counts.js';
import type { ChatRequest, ChatResponse, LLMProvider } from '../providers/types.js';
import type { Budget } from './budget.js';

/** Output tokens a call is assumed to write when the request sets no `maxTokens`. */
export const DEFAULT_OUTPUT_TOKENS = 4_096;

/** The chat a call without a session counts against (summaries, checks). */
export const SYSTEM_SESSION = 'system';

export interface BudgetedProviderOptions {
  provider: LLMProvider;
  budget: Budget;
  logger: Logger;
}

/** The provider every worker call goes through when limits or prices are set. */
export class BudgetedProvider implements LLMProvider {
  readonly #inner: LLMProvider;
  readonly #budget: Budget;
  readonly #log: Logger;

  constructor(options: BudgetedProviderOptions) {
    this.#inner = options.provider;
    this.#budget = options.budget;
    this.#log = options.logger;
    if (options.provider.listModels) this.listModels = (signal) => options.provider.listModels!(signal);
    if (options.provider.transcribe) this.transcribe = (a, s) => options.provider.transcribe!(a, s);
    if (options.provider.nextModel) this.nextModel = (m) => options.provider.nextModel!(m);
    if (options.provider.availability) this.availability = () => options.provider.availability!();
  }

  get model(): string {
    return this.#inner.model;
  }

  get models() {
    return this.#inner.models;
  }

  listModels?: LLMProvider['listModels'];
  transcribe?: LLMProvider['transcribe'];
  nextModel?: LLMProvider['nextModel'];
  availability?: LLMProvider['availability'];

  async chat(request: ChatRequest): Promise<ChatResponse> {
    const budget = this.#budget;
    const session = request.cacheKey ?? SYSTEM_SESSION;
    const first = await this.#inner.nextModel?.(request.model);
    const prices = priceOf(budget.config, first?.id ?? request.model ?? this.#inner.model, first?.model);
    const promptTokens =
      estimateTokens(request.messages) + Math.ceil(JSON.stringify(request.tools ?? []).length / 4);
    const estimate: TokenCounts = {
      promptTokens,
      cachedTokens: 0,
      cacheWriteTokens: 0,
      completionTokens: request.maxTokens ?? DEFAULT_OUTPUT_TOKENS,
    };
    const costNano = prices ? toNano(estimateCost(estimate, prices)) : 0;
    const tokens = estimate.promptTokens + estimate.completionTokens;
    const held = await budget.store.reserve(session, budget.period(), { costNano, tokens }, budget.limits);
    if (!held.ok) {
      this.#log.warn({ session, limit: held.limit }, 'model call refused at a limit');
      throw new BudgetError(held.limit, budget.limitLine(held.limit));
    }
    let response: ChatResponse;
    try {
      response = await this.#inner.chat(request);
    } catch (err) {
      await budget.store.release(held.reservation, budget.limits).catch((releaseErr: unknown) => {
        this.#log.warn({ err: releaseErr }, 'a model call’s reservation could not be given back');
      });
      throw err;
    }
    await this.#settle(response, held.reservation, estimate, first?.id, session);
    return response;
  }

  /** Settles at the answering model's prices; without reported usage the estimate stands. */
  async #settle(
    response: ChatResponse,
    reservation: Parameters<Budget['store']['release']>[0],
    estimate: TokenCounts,
    firstId: string | undefined,
    session: string,
  ): Promise<void> {
    const budget = this.#budget;
    const model = response.answeredBy?.model ?? firstId ?? this.#inner.model;
    const info = this.#inner.models?.find((m) => m.id === model);
    const prices = priceOf(budget.config, model, info?.model);
    const u = response.usage;
    const counts: TokenCounts = u
      ? {
          promptTokens: u.promptTokens,
          cachedTokens: u.cachedTokens ?? 0,
          cacheWriteTokens: u.cacheWriteTokens ?? 0,
          completionTokens: u.completionTokens,
        }
      : estimate;
    try {
      const crossed = await budget.store.settle(
        reservation,
        {
          model,
          counts,
          costNano: prices ? toNano(estimateCost(counts, prices)) : 0,
          hour: budget.period().hour,
        },
        budget.limits,
      );
      await budget.noticeCrossed(crossed, session);
    } catch (err) {
      // The answer is here and paid for; a lost settlement leaves the estimate counted.
      this.#log.warn({ err }, 'a model call could not be settled; its estimate stays counted');
    }
  }
}

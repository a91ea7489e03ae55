/**
 * An Embedder that holds every embedding call to the limits, as
 * BudgetedProvider does chat calls: it reserves the estimated input tokens
 * (a token per four characters) at the embedding model's input price, then
 * settles to the tokens the endpoint reported (input only: an embedding has
 * no output); a failed call gives its reservation back. Prices: the model's
 * MAGPIE_PRICES entry, else MAGPIE_PRICE_* (its input price), else tokens only.
 */
import { priceOf } from '../config/budget.js';
import { BudgetError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { toNano } from '../messages/budget.js';
import { estimateCost, type TokenCounts } from '../messages/token-counts.js';
import type { Embedder, Embeddings, EmbedOptions } from '../providers/embedder.js';
import type { Budget } from './budget.js';
import { SYSTEM_SESSION } from './budgeted-provider.js';

export interface BudgetedEmbedderOptions {
  embedder: Embedder;
  budget: Budget;
  logger: Logger;
  /** The id the model's calls are recorded under (MAGPIE_PRICES' key). @defaultValue the model name */
  id?: string;
}

/** Input tokens of `texts` as estimated before the call. */
export function estimateEmbeddingTokens(texts: readonly string[]): number {
  return texts.reduce((n, t) => n + Math.ceil(t.length / 4), 0);
}

/** The embedder memory search uses when limits or prices are set. */
export class BudgetedEmbedder implements Embedder {
  readonly #inner: Embedder;
  readonly #budget: Budget;
  readonly #log: Logger;
  readonly #id: string;

  constructor(options: BudgetedEmbedderOptions) {
    this.#inner = options.embedder;
    this.#budget = options.budget;
    this.#log = options.logger;
    this.#id = options.id ?? options.embedder.model;
  }

  get model(): string {
    return this.#inner.model;
  }

  get baseURL(): string {
    return this.#inner.baseURL;
  }

  async embed(texts: readonly string[], options?: EmbedOptions): Promise<Embeddings> {
    const budget = this.#budget;
    const prices = priceOf(budget.config, this.#id, this.#inner.model);
    const cost = (promptTokens: number) => {
      const counts: TokenCounts = { promptTokens, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 0 };
      return { counts, costNano: prices ? toNano(estimateCost(counts, prices)) : 0 };
    };
    const estimate = cost(estimateEmbeddingTokens(texts));
    const held = await budget.store.reserve(
      SYSTEM_SESSION,
      budget.period(),
      { costNano: estimate.costNano, tokens: estimate.counts.promptTokens },
      budget.limits,
    );
    if (!held.ok) {
      this.#log.warn({ limit: held.limit }, 'embedding call refused at a limit');
      throw new BudgetError(held.limit, budget.limitLine(held.limit));
    }
    let result: Embeddings;
    try {
      result = await this.#inner.embed(texts, options);
    } catch (err) {
      await budget.store.release(held.reservation, budget.limits).catch((releaseErr: unknown) => {
        this.#log.warn({ err: releaseErr }, 'an embedding call’s reservation could not be given back');
      });
      throw err;
    }
    const actual = result.promptTokens === undefined ? estimate : cost(result.promptTokens);
    try {
      const crossed = await budget.store.settle(
        held.reservation,
        { model: this.#id, counts: actual.counts, costNano: actual.costNano, hour: budget.period().hour },
        budget.limits,
      );
      await budget.noticeCrossed(crossed, SYSTEM_SESSION);
    } catch (err) {
      // The vectors are here and paid for; a lost settlement leaves the estimate counted.
      this.#log.warn({ err }, 'an embedding call could not be settled; its estimate stays counted');
    }
    return result;
  }
}

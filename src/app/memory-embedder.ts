/**
 * The embedder memory search uses (MAGPIE_EMBEDDING_MODEL): the endpoint's
 * OpenAI-compatible `/v1/embeddings`, held to the budget when one is kept.
 */
import type { Budget } from '../budget/budget.js';
import { BudgetedEmbedder } from '../budget/budgeted-embedder.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../log/index.js';
import type { Embedder } from '../providers/embedder.js';
import { OpenAIEmbedder } from '../providers/openai/embeddings.js';

/** The configured embedder, or undefined when MAGPIE_EMBEDDING_MODEL is unset. */
export function memoryEmbedder(config: Config, logger: Logger, budget?: Budget): Embedder | undefined {
  const m = config.llm.embedding;
  if (!m) return undefined;
  const embedder = new OpenAIEmbedder({
    apiKey: m.apiKey,
    baseURL: m.baseURL,
    model: m.model,
    settings: { url: 'MAGPIE_EMBEDDING_MODEL', key: m.keyVar ?? 'MAGPIE_EMBEDDING_MODEL' },
  });
  return budget ? new BudgetedEmbedder({ embedder, budget, logger, id: m.id }) : embedder;
}

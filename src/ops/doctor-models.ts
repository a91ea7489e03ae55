/**
 * The doctor's model checks: for every configured model (MAGPIE_MODEL, then
 * each of MAGPIE_FALLBACK_MODELS) its endpoint lists it, and with `--live` it
 * answers a one-token completion. Each model is its own check with its own
 * time limit; a failure names the setting to fix (OPENAI_BASE_URL or the entry
 * in MAGPIE_FALLBACK_MODELS, OPENAI_API_KEY or the entry's #VAR). The
 * embedding model (MAGPIE_EMBEDDING_MODEL) is shown, and with `--live`
 * asked for one vector.
 */
import { hasMoneyLimit, priceOf } from '../config/budget.js';
import type { Config, ModelEndpointConfig } from '../config/index.js';
import { AppError, describeError, hasCode } from '../errors/index.js';
import { OpenAIEmbedder } from '../providers/openai/embeddings.js';
import { OpenAIProvider } from '../providers/openai/provider.js';
import { type Check, failed, pass, skipped, warned } from './doctor.js';

/**
 * One check per model, and with `live` one more per model. The first model's
 * are named `llm endpoint` and `llm live`; a fallback's `fallback <id>` and
 * `fallback <id> live`.
 */
export function modelChecks(config: Config, live: boolean): Check[] {
  const models = config.llm.models;
  const reach = [
    ...models.map((m, i) => listCheck(m, i === 0 ? 'llm endpoint' : `fallback ${m.id}`)),
    ...(hasMoneyLimit(config.budget) ? [pricesCheck(config)] : []),
  ];
  const embedding = config.llm.embedding;
  if (embedding) reach.push(embeddingCheck(embedding));
  if (!live) return reach;
  return [
    ...reach,
    ...models.map((m, i) => liveCheck(m, i === 0 ? 'llm live' : `fallback ${m.id} live`)),
    ...(embedding ? [embeddingLiveCheck(embedding)] : []),
  ];
}

/** Shows which model gives memory search its vectors (no call: `--live` makes one). */
function embeddingCheck(m: ModelEndpointConfig): Check {
  return {
    name: 'embedding model',
    async run() {
      if (m.keyVar && !m.apiKey)
        return failed(`${m.keyVar} is not set`, `put the key of ${m.baseURL} in ${m.keyVar} in .env`);
      return pass(`memory search by meaning with ${m.model} on ${m.baseURL} (MAGPIE_EMBEDDING_MODEL)`);
    },
  };
}

/** One short embedding call: the endpoint answers with a vector. */
function embeddingLiveCheck(m: ModelEndpointConfig): Check {
  return {
    name: 'embedding live',
    async run(signal) {
      if (m.keyVar && !m.apiKey) return skipped(`${m.keyVar} is not set`);
      try {
        const started = Date.now();
        const embedder = new OpenAIEmbedder({
          apiKey: m.apiKey,
          baseURL: m.baseURL,
          model: m.model,
          timeoutMs: 3_000,
          settings: { url: 'MAGPIE_EMBEDDING_MODEL', key: m.keyVar ?? 'MAGPIE_EMBEDDING_MODEL' },
        });
        const { vectors } = await embedder.embed(['magpie doctor'], signal ? { signal } : {});
        return pass(`a ${vectors[0]?.length}-number vector from ${m.model} in ${Date.now() - started} ms`);
      } catch (err) {
        return failed(
          describeError(err),
          hasCode(err, 'PROVIDER_AUTH')
            ? `put a valid key for ${m.baseURL} in ${m.keyVar ?? 'the variable named after # in MAGPIE_EMBEDDING_MODEL'}`
            : `start the embedding server or fix MAGPIE_EMBEDDING_MODEL in .env (now ${m.model}@${m.baseURL}); unset it for keyword search only`,
        );
      }
    },
  };
}

/**
 * With a money limit set, every model that may answer needs a price, or its
 * calls count tokens only: a warning (magpie runs, the money limit just does
 * not see those calls), not a failure.
 */
function pricesCheck(config: Config): Check {
  return {
    name: 'budget prices',
    async run() {
      const unpriced = config.llm.models
        .filter((m) => !priceOf(config.budget, m.id, m.model))
        .map((m) => m.id);
      if (unpriced.length === 0) return pass('every model that may answer has a price for the money limits');
      return warned(
        `a money limit (MAGPIE_BUDGET_*) is set but ${unpriced.join(', ')} has no price: its calls count tokens only, not against the money limit`,
        `add ${unpriced.map((id) => `${id}=INPUT/CACHED/OUTPUT`).join(', ')} to MAGPIE_PRICES (per million tokens)`,
      );
    },
  };
}

function listCheck(m: ModelEndpointConfig, name: string): Check {
  return {
    name,
    async run(signal) {
      const missing = missingKey(m);
      if (missing) return failed(missing.detail, missing.fix);
      let listed: string[];
      try {
        listed = await provider(m).listModels(signal);
      } catch (err) {
        return failed(`${m.baseURL}: ${describeError(err)}`, fixFor(err, m));
      }
      if (!listed.includes(m.model)) {
        return failed(
          `${m.baseURL} does not list the model "${m.model}" (${listed.slice(0, 5).join(', ') || 'none listed'})`,
          primary(m)
            ? 'set MAGPIE_MODEL in .env to one of the listed models'
            : `set the model of this entry in MAGPIE_FALLBACK_MODELS to one of the listed models`,
        );
      }
      return pass(`${m.baseURL} lists ${m.model}`);
    },
  };
}

function liveCheck(m: ModelEndpointConfig, name: string): Check {
  return {
    name,
    async run(signal) {
      const missing = missingKey(m);
      if (missing) return skipped(missing.detail);
      try {
        const started = Date.now();
        await provider(m).chat({
          messages: [{ role: 'user', content: 'Reply with OK.' }],
          maxTokens: 1,
          // One token may all go to reasoning: an answer at all is what this check is after.
          allowEmpty: true,
          signal,
        });
        return pass(`one-token completion from ${m.model} in ${Date.now() - started} ms`);
      } catch (err) {
        return failed(describeError(err), fixFor(err, m));
      }
    },
  };
}

function primary(m: ModelEndpointConfig): boolean {
  return m.setting === 'MAGPIE_MODEL';
}

/** The first model needs OPENAI_API_KEY; a fallback that names a #VAR needs that variable set. */
function missingKey(m: ModelEndpointConfig): { detail: string; fix: string } | undefined {
  if (m.apiKey) return undefined;
  if (primary(m)) {
    return {
      detail: 'OPENAI_API_KEY is not set',
      fix: 'put your key in .env (OPENAI_API_KEY=...; "none" for a local server)',
    };
  }
  if (m.keyVar)
    return { detail: `${m.keyVar} is not set`, fix: `put the key of ${m.baseURL} in ${m.keyVar} in .env` };
  return undefined;
}

function provider(m: ModelEndpointConfig): OpenAIProvider {
  return new OpenAIProvider({
    apiKey: m.apiKey ?? '',
    baseURL: m.baseURL,
    model: m.model,
    timeoutMs: 3_000,
    maxRetries: 0,
    ...(primary(m) ? {} : { settings: { url: m.setting, key: m.keyVar ?? m.setting } }),
  });
}

function fixFor(err: unknown, m: ModelEndpointConfig): string {
  if (hasCode(err, 'PROVIDER_AUTH')) {
    if (!m.keyVar) {
      return `the endpoint wants a key: end the entry ${m.id} in MAGPIE_FALLBACK_MODELS with #VAR and put the key in VAR in .env`;
    }
    return `the endpoint refused the key: put a valid ${m.keyVar} in .env for ${m.baseURL}`;
  }
  if (err instanceof AppError && err.code === 'PROVIDER_UNREACHABLE') {
    return primary(m)
      ? `start the LLM server or fix OPENAI_BASE_URL in .env (now ${m.baseURL})`
      : `start the LLM server or fix the URL of ${m.id} in MAGPIE_FALLBACK_MODELS (now ${m.baseURL})`;
  }
  return primary(m)
    ? `check OPENAI_BASE_URL (${m.baseURL}) and MAGPIE_MODEL in .env`
    : `check the entry ${m.id} in MAGPIE_FALLBACK_MODELS (${m.baseURL})`;
}

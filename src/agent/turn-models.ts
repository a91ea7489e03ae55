/**
 * What the agent loop asks about models: the chat's /model choice for a turn,
 * the context window of the model the next call goes to (a resting first
 * choice is passed over, so the budget follows the model actually used), and
 * the models and choices /model and /status show.
 */
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import type { LLMProvider } from '../providers/types.js';
import { type ModelCommandContext, resolveChoice } from './model-command.js';
import { contextLimitFor } from './model-limits.js';
import type { ModelChoiceStore } from './ports.js';

export interface TurnModelsOptions {
  provider: LLMProvider;
  choices: ModelChoiceStore;
  /** The loop's default model (its `model` option, else the provider's). */
  defaultModel: string;
  /** The default model's context window (MAGPIE_CONTEXT_TOKENS or the table). */
  defaultWindow: number;
}

export class TurnModels {
  readonly #o: TurnModelsOptions;

  constructor(options: TurnModelsOptions) {
    this.#o = options;
  }

  /** The configured models (the provider's, else just the default) and the chats' choices. */
  commandContext(): Omit<ModelCommandContext, 'sessionKey'> {
    const { provider, defaultModel } = this.#o;
    const models = provider.models ?? [{ id: defaultModel, model: defaultModel, baseURL: '', vision: false }];
    return {
      models,
      choices: this.#o.choices,
      ...(provider.availability ? { availability: () => provider.availability!() } : {}),
    };
  }

  /** The model id the chat picked with /model (undefined: the default); a choice that cannot be read is logged. */
  async chosen(sessionKey: string, log: Logger): Promise<string | undefined> {
    const models = this.#o.provider.models;
    if (!models) return undefined;
    try {
      return resolveChoice(await this.#o.choices.get(sessionKey), models);
    } catch (err) {
      log.warn({ err: describeError(err) }, "could not read the chat's model choice; using the default");
      return undefined;
    }
  }

  /**
   * The context window for the next call asking for `model`: that of the model it will go to
   * first. MAGPIE_CONTEXT_TOKENS speaks for the default model only; others use the table.
   */
  async windowFor(model: string | undefined): Promise<number> {
    const { provider, defaultWindow } = this.#o;
    if (!provider.nextModel || !provider.models) return defaultWindow;
    const next = await provider.nextModel(model);
    return next.id === provider.models[0]?.id ? defaultWindow : contextLimitFor(next.model);
  }
}

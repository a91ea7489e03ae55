/**
 * `/model`: lists the configured models and which one this chat uses;
 * `/model NAME` (or its number in the list) switches this chat only,
 * `/model default` goes back. The choice lives in a ModelChoiceStore, so it
 * survives restarts and every worker sees it; a name that is not configured
 * is refused and changes nothing.
 */
import type { ModelAvailability, ModelInfo } from '../providers/types.js';
import type { ModelChoiceStore } from './ports.js';

/** Choices kept in memory only (tests, and loops built without a store). */
export class MemoryModelChoiceStore implements ModelChoiceStore {
  readonly #choices = new Map<string, string>();

  async get(sessionKey: string): Promise<string | undefined> {
    return this.#choices.get(sessionKey);
  }

  async set(sessionKey: string, model: string | undefined): Promise<void> {
    if (model === undefined) this.#choices.delete(sessionKey);
    else this.#choices.set(sessionKey, model);
  }
}

export interface ModelCommandContext {
  sessionKey: string;
  /** The configured models, the default first. */
  models: readonly ModelInfo[];
  choices: ModelChoiceStore;
  /** Cool-downs by model, when the provider keeps them. */
  availability?: () => Promise<ModelAvailability[]>;
}

/**
 * The model id a chat's stored choice stands for, or undefined (the default):
 * a choice no longer configured counts as none.
 */
export function resolveChoice(stored: string | undefined, models: readonly ModelInfo[]): string | undefined {
  if (stored === undefined) return undefined;
  return models.some((m) => m.id === stored) && models[0]?.id !== stored ? stored : undefined;
}

/**
 * Runs `/model [argument]` and returns the reply.
 *
 * @example await runModelCommand('llama3.1', { sessionKey, models, choices }) // 'This chat now uses llama3.1 …'
 */
export async function runModelCommand(
  argument: string | undefined,
  ctx: ModelCommandContext,
): Promise<string> {
  const wanted = argument?.trim() ?? '';
  if (wanted === '') return listing(ctx);
  const models = ctx.models;
  const defaultId = models[0]?.id ?? '';
  if (/^default$/i.test(wanted)) {
    await ctx.choices.set(ctx.sessionKey, undefined);
    return `This chat is back on the default model, ${defaultId}.`;
  }
  const found = pick(wanted, models);
  if (found === undefined) {
    const shown = wanted.length > 60 ? `${wanted.slice(0, 57)}...` : wanted;
    return `There is no model "${shown}" here. Choose one of: ${models.map((m) => m.id).join(', ')} (or default).`;
  }
  if (Array.isArray(found)) {
    return `"${wanted}" could be ${found.map((m) => m.id).join(' or ')}: use the full name.`;
  }
  await ctx.choices.set(ctx.sessionKey, found.id === defaultId ? undefined : found.id);
  const rest = models.length > 1 ? ' (the others step in if it fails)' : '';
  const resting = (await availabilityOf(ctx)).find((a) => a.model.id === found.id)?.cooling;
  const note = resting
    ? ` It is resting ${seconds(resting.leftMs)} after failing; until then the next model answers.`
    : '';
  return `This chat now uses ${found.id}${rest}.${note}`;
}

/** The list: each model in order, the default and this chat's marked, cool-downs shown. */
async function listing(ctx: ModelCommandContext): Promise<string> {
  const stored = await ctx.choices.get(ctx.sessionKey);
  const chosen = resolveChoice(stored, ctx.models) ?? ctx.models[0]?.id;
  const availability = await availabilityOf(ctx);
  if (ctx.models.length === 1) {
    return `Model: ${chosen} (the only one configured; MAGPIE_FALLBACK_MODELS adds others to fall back on).`;
  }
  const lines = ['Models, in the order they step in when one fails:'];
  ctx.models.forEach((m, i) => {
    const marks = [i === 0 ? 'default' : '', m.id === chosen ? '← this chat' : ''].filter(Boolean);
    const cooling = availability.find((a) => a.model.id === m.id)?.cooling;
    const rest = cooling ? ` — resting ${seconds(cooling.leftMs)} after failing` : '';
    lines.push(`${i + 1}. ${m.id}${marks.length ? ` (${marks.join(', ')})` : ''}${rest}`);
  });
  if (
    stored !== undefined &&
    resolveChoice(stored, ctx.models) === undefined &&
    stored !== ctx.models[0]?.id
  ) {
    lines.push(`(This chat had picked ${stored}, which is no longer configured.)`);
  }
  lines.push(
    `This chat uses ${chosen} first. /model NAME (or its number) switches this chat; /model default goes back.`,
  );
  return lines.join('\n');
}

/** The model `wanted` names: its id (any case), its number, or a model name only one entry has. */
function pick(wanted: string, models: readonly ModelInfo[]): ModelInfo | ModelInfo[] | undefined {
  const exact = models.find((m) => m.id === wanted);
  if (exact) return exact;
  const lower = wanted.toLowerCase();
  const loose = models.filter((m) => m.id.toLowerCase() === lower);
  if (loose.length === 1) return loose[0];
  if (/^\d+$/.test(wanted)) return models[Number(wanted) - 1];
  const byName = models.filter((m) => m.model.toLowerCase() === lower);
  if (byName.length === 1) return byName[0];
  return byName.length > 1 ? byName : undefined;
}

async function availabilityOf(ctx: ModelCommandContext): Promise<ModelAvailability[]> {
  return ctx.availability ? ctx.availability() : [];
}

function seconds(ms: number): string {
  const s = Math.max(1, Math.ceil(ms / 1000));
  return s < 120 ? `${s}s` : `${Math.ceil(s / 60)} min`;
}

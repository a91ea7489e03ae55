/**
 * The first step of `magpie onboard`: which endpoint, its key and the model,
 * each from a flag, a question or (under `--yes`) the existing `.env`; then
 * the endpoint's model list and a one-token call prove them. Sets
 * OPENAI_BASE_URL, OPENAI_API_KEY and MAGPIE_MODEL.
 */
import { ConfigError } from '../errors/index.js';
import { chatOnce, listModels, type ModelEndpoint, unknownModel } from './checks.js';
import { existingValue, maskSecret, missingFlag, progress, type StepContext } from './context.js';
import {
  checkBaseURL,
  ENDPOINT_PRESETS,
  type EndpointPreset,
  NO_KEY,
  presetByAnswer,
  presetFor,
} from './endpoints.js';
import type { Prompter } from './prompts.js';

/** How many listed models the question shows by number. */
const SHOWN_MODELS = 20;

/** Runs the model step; throws the one-line error that stops onboarding when a check fails. */
export async function modelStep(ctx: StepContext): Promise<void> {
  const { baseURL, preset } = await chooseEndpoint(ctx);
  const endpoint = await chooseKey(ctx, baseURL, preset);
  const signal = ctx.prompter?.signal;
  const listing = await listModels(endpoint, signal);
  if (listing.models)
    progress(ctx, `✓ ${baseURL} answers and lists ${plural(listing.models.length, 'model')}`);
  else progress(ctx, `  ${baseURL} gives no model list (${listing.reason}); the model is checked by a call`);
  const model = await chooseModel(ctx, preset, listing.models);
  if (listing.models && !isListed(model, listing.models)) throw unknownModel(endpoint, model, listing.models);
  const started = Date.now();
  await chatOnce(endpoint, model, signal);
  progress(ctx, `✓ ${model} answered a one-token call in ${Date.now() - started} ms`);
  ctx.updates.OPENAI_BASE_URL = baseURL;
  ctx.updates.OPENAI_API_KEY = endpoint.apiKey;
  ctx.updates.MAGPIE_MODEL = model;
}

async function chooseEndpoint(ctx: StepContext): Promise<{ baseURL: string; preset: EndpointPreset }> {
  const flag = ctx.flags['base-url'];
  if (flag !== undefined) {
    const checked = checkBaseURL(flag);
    if (!checked.ok) throw new ConfigError(`--base-url: ${checked.reason}`);
    return { baseURL: checked.url, preset: presetFor(checked.url) };
  }
  const current = existingValue(ctx, 'OPENAI_BASE_URL');
  const prompter = ctx.prompter;
  if (!prompter) {
    const baseURL = current ?? ENDPOINT_PRESETS[0]!.baseURL!;
    const checked = checkBaseURL(baseURL);
    if (!checked.ok) throw new ConfigError(`OPENAI_BASE_URL in .env: ${checked.reason}; give --base-url`);
    return { baseURL: checked.url, preset: presetFor(checked.url) };
  }
  const fallback = presetFor(current ?? ENDPOINT_PRESETS[0]!.baseURL);
  prompter.say('Which model endpoint?\n');
  const width = Math.max(...ENDPOINT_PRESETS.map((p) => p.label.length));
  ENDPOINT_PRESETS.forEach((p, i) => {
    prompter.say(`  ${i + 1}) ${p.label.padEnd(width)}  ${p.baseURL ?? ''}`.trimEnd().concat('\n'));
  });
  let preset: EndpointPreset | undefined;
  while (!preset) {
    preset = presetByAnswer(
      await prompter.ask('Endpoint', { default: String(ENDPOINT_PRESETS.indexOf(fallback) + 1) }),
    );
    if (!preset) prompter.say(`  answer 1 to ${ENDPOINT_PRESETS.length} (or a name such as ollama)\n`);
  }
  if (preset.baseURL) return { baseURL: preset.baseURL, preset };
  return {
    baseURL: await askURL(prompter, current && presetFor(current).id === 'custom' ? current : undefined),
    preset,
  };
}

async function askURL(prompter: Prompter, fallback: string | undefined): Promise<string> {
  for (;;) {
    const checked = checkBaseURL(
      await prompter.ask('Base URL (ending in /v1 for most servers)', { default: fallback }),
    );
    if (checked.ok) return checked.url;
    prompter.say(`  ${checked.reason}\n`);
  }
}

async function chooseKey(ctx: StepContext, baseURL: string, preset: EndpointPreset): Promise<ModelEndpoint> {
  const flag = ctx.flags['api-key'];
  if (flag !== undefined) {
    if (flag.trim() === '')
      throw new ConfigError('--api-key is empty (give "none" for a server that needs no key)');
    return { baseURL, apiKey: flag.trim(), keySource: 'the key given with --api-key' };
  }
  // The key in .env belongs to the URL in .env (OpenAI's when unset): it is offered again only for that endpoint.
  const keyFor = existingValue(ctx, 'OPENAI_BASE_URL') ?? ENDPOINT_PRESETS[0]!.baseURL!;
  const current = keyFor.replace(/\/+$/, '') === baseURL ? existingValue(ctx, 'OPENAI_API_KEY') : undefined;
  const fallback = current ?? (preset.needsKey ? undefined : NO_KEY);
  const prompter = ctx.prompter;
  if (!prompter) {
    if (!fallback) throw missingFlag('--api-key', `the key of ${baseURL}`);
    return {
      baseURL,
      apiKey: fallback,
      keySource: current ? 'OPENAI_API_KEY in .env' : 'the key (--api-key)',
    };
  }
  const label = current ? `Enter keeps ${maskSecret(current)}` : fallback ? 'Enter: none needed' : undefined;
  for (;;) {
    const key = await prompter.ask(`API key for ${baseURL} (hidden)`, {
      hidden: true,
      default: fallback,
      defaultLabel: label,
    });
    if (key !== '')
      return {
        baseURL,
        apiKey: key,
        keySource: key === current ? 'OPENAI_API_KEY in .env' : 'the key you typed',
      };
    prompter.say(`  ${baseURL} needs a key (type "none" if your server needs none)\n`);
  }
}

async function chooseModel(
  ctx: StepContext,
  preset: EndpointPreset,
  listed: string[] | undefined,
): Promise<string> {
  const flag = ctx.flags.model?.trim();
  if (flag !== undefined) {
    if (flag === '') throw new ConfigError('--model is empty');
    return flag;
  }
  const current = existingValue(ctx, 'MAGPIE_MODEL');
  const candidates = [current, preset.defaultModel].filter((m): m is string => m !== undefined);
  const known = listed ? candidates.find((m) => isListed(m, listed)) : candidates[0];
  const prompter = ctx.prompter;
  if (!prompter) {
    // Under --yes only a model named before (.env, or the endpoint's usual one) is taken, never a guess.
    if (!known)
      throw missingFlag('--model', `no model in .env that ${listed ? 'the endpoint lists' : 'to take'}`);
    return known;
  }
  const offered = listed ? chatModels(listed) : [];
  if (offered.length > 0) {
    prompter.say('Models the endpoint offers:\n');
    offered.slice(0, SHOWN_MODELS).forEach((m, i) => {
      prompter.say(`  ${i + 1}) ${m}\n`);
    });
    if (listed!.length > SHOWN_MODELS) {
      prompter.say(`  … ${listed!.length} in all: type a name for one not shown\n`);
    }
  }
  for (;;) {
    const answer = await prompter.ask('Model (a number or a name)', { default: known ?? offered[0] });
    const n = Number(answer);
    if (Number.isInteger(n) && n >= 1 && n <= Math.min(offered.length, SHOWN_MODELS)) return offered[n - 1]!;
    if (answer !== '') return answer;
    prompter.say('  type the name of a model\n');
  }
}

/** Models that are not for chat (embeddings, speech, images, moderation, old completions). */
const NOT_CHAT =
  /embed|whisper|tts|dall-e|moderation|davinci|babbage|transcribe|image|realtime|audio|search|sora/i;

/**
 * The listed models worth offering for chat: those that are not obviously for
 * something else, sorted by name; the whole list when that leaves none.
 *
 * @example chatModels(['text-embedding-3-small', 'gpt-4o', 'whisper-1']) // ['gpt-4o']
 */
export function chatModels(listed: string[]): string[] {
  const chat = listed.filter((m) => !NOT_CHAT.test(m));
  return [...(chat.length > 0 ? chat : listed)].sort();
}

/** Listed as is, or (Ollama) as its `:latest` tag, which the bare name stands for. */
export function isListed(model: string, listed: string[]): boolean {
  return listed.includes(model) || (!model.includes(':') && listed.includes(`${model}:latest`));
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

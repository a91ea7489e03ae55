/**
 * MAGPIE_FALLBACK_MODELS: the models tried after MAGPIE_MODEL, in order, when
 * a call fails. Each comma-separated entry is `model` (the primary's endpoint
 * and key), `model@base_url` (another OpenAI-compatible endpoint, no key), and
 * optionally `#VAR` naming the environment variable that holds that entry's
 * key. Also the short ids chats use with `/model`.
 */
import { ConfigError } from '../errors/index.js';

/** One model and the endpoint that serves it. */
export interface ModelEndpointConfig {
  /**
   * The name `/model`, status and metrics use: the model name, or `model@host` when two
   * entries share a name (then `model@base_url` if that is not enough).
   */
  id: string;
  /** The model name sent to the endpoint. */
  model: string;
  /** The endpoint, e.g. `http://127.0.0.1:11434/v1`. */
  baseURL: string;
  /** Sent as a bearer token; undefined when the endpoint takes none. */
  apiKey: string | undefined;
  /** Where this entry comes from, for messages: `MAGPIE_MODEL` or `MAGPIE_FALLBACK_MODELS`. */
  setting: string;
  /** The variable holding the key (`OPENAI_API_KEY`, the entry's `#VAR`, set or not); undefined: none is used. */
  keyVar: string | undefined;
}

/** What an entry inherits from the primary model. */
export interface PrimaryEndpoint {
  model: string;
  baseURL: string;
  apiKey: string | undefined;
}

const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** `model@scheme://…`: the first `@` that begins a URL splits (model names may hold `@`, e.g. Vertex's `name@date`). */
const WITH_URL = /^(.*?)@([A-Za-z][A-Za-z0-9+.-]*:\/\/.*)$/;
const MAX_MODEL_CHARS = 200;

/**
 * Every configured model, the primary first, each with its id.
 *
 * @param text the value of MAGPIE_FALLBACK_MODELS (unset or blank: no fallbacks)
 * @param env where `#VAR` keys are read
 * @param needKeys a missing `#VAR` is an error (commands that call the model); otherwise the entry has no key
 * @throws ConfigError (exit 2) with one line naming the entry and what is wrong with it.
 * @example
 * parseModels('llama3.1@http://127.0.0.1:11434/v1', { model: 'gpt-4o', baseURL, apiKey }, process.env, true)
 * // [{ id: 'gpt-4o', … }, { id: 'llama3.1', model: 'llama3.1', baseURL: 'http://127.0.0.1:11434/v1', apiKey: undefined, … }]
 */
export function parseModels(
  text: string | undefined,
  primary: PrimaryEndpoint,
  env: NodeJS.ProcessEnv,
  needKeys: boolean,
): ModelEndpointConfig[] {
  const entries: Omit<ModelEndpointConfig, 'id'>[] = [
    {
      model: primary.model,
      baseURL: primary.baseURL,
      apiKey: primary.apiKey,
      setting: 'MAGPIE_MODEL',
      keyVar: primary.apiKey ? 'OPENAI_API_KEY' : undefined,
    },
  ];
  const items = (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const item of items) {
    const entry = parseEntry(item, primary, env, needKeys);
    const twin = entries.find((e) => e.model === entry.model && sameEndpoint(e.baseURL, entry.baseURL));
    if (twin) {
      const where = twin.setting === 'MAGPIE_MODEL' ? ' (it is MAGPIE_MODEL)' : ' twice';
      throw bad(item, `${entry.model} on ${entry.baseURL} is listed${where}`);
    }
    entries.push(entry);
  }
  return withIds(entries);
}

/**
 * One `model[@url][#VAR]` entry (MAGPIE_FALLBACK_MODELS' form, also MAGPIE_TTS_MODEL's).
 * @param setting the variable named in errors and in the result @defaultValue 'MAGPIE_FALLBACK_MODELS'
 * @throws ConfigError (exit 2) naming the entry and what is wrong with it.
 */
export function parseEntry(
  item: string,
  primary: PrimaryEndpoint,
  env: NodeJS.ProcessEnv,
  needKeys: boolean,
  setting = 'MAGPIE_FALLBACK_MODELS',
): Omit<ModelEndpointConfig, 'id'> {
  const bad = (what: string, why: string) => badEntry(what, why, setting);
  let rest = item;
  let keyVar: string | undefined;
  const hash = item.lastIndexOf('#');
  if (hash >= 0) {
    keyVar = item.slice(hash + 1).trim();
    rest = item.slice(0, hash).trim();
    if (!VARIABLE.test(keyVar)) {
      throw bad(item, 'after # comes the name of the variable that holds the key, e.g. #MISTRAL_API_KEY');
    }
  }
  let model = rest;
  let baseURL: string | undefined;
  const withUrl = WITH_URL.exec(rest);
  if (withUrl) {
    model = withUrl[1]!.trim();
    baseURL = checkedUrl(item, withUrl[2]!.trim(), setting);
  } else {
    const at = rest.lastIndexOf('@');
    if (at > 0 && /[/:]/.test(rest.slice(at + 1))) {
      throw bad(
        item,
        'after @ comes the endpoint URL with http:// or https://, e.g. http://127.0.0.1:11434/v1',
      );
    }
  }
  if (model === '') throw bad(item, 'the model name is missing');
  if (/[\s\p{Cc}]/u.test(model) || model.length > MAX_MODEL_CHARS) {
    throw bad(
      item,
      `"${model.slice(0, 40)}" is not a model name (no spaces, at most ${MAX_MODEL_CHARS} characters)`,
    );
  }
  let apiKey: string | undefined;
  if (keyVar !== undefined) {
    apiKey = env[keyVar]?.trim() || undefined;
    if (apiKey === undefined && needKeys) {
      throw bad(item, `${keyVar} is not set: put that endpoint's key in .env`);
    }
  } else if (baseURL === undefined) {
    apiKey = primary.apiKey;
    keyVar = primary.apiKey ? 'OPENAI_API_KEY' : undefined;
  }
  return {
    model,
    baseURL: baseURL ?? primary.baseURL,
    apiKey,
    setting,
    keyVar,
  };
}

/** The endpoint of an entry: http(s), and no user name or password (the client would refuse to send them). */
function checkedUrl(item: string, text: string, setting: string): string {
  const bad = (what: string, why: string) => badEntry(what, why, setting);
  if (!URL.canParse(text))
    throw bad(item, `"${text}" is not a URL (expected e.g. http://127.0.0.1:11434/v1)`);
  const url = new URL(text);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw bad(item, `the endpoint must start with http:// or https:// (not ${url.protocol}//)`);
  }
  if (url.username || url.password) {
    throw bad(item, 'the endpoint URL holds a user name or password; name the key with #VAR instead');
  }
  return text;
}

/** Ids: the model name when unique, else `model@host`, else `model@base_url`. */
function withIds(entries: Omit<ModelEndpointConfig, 'id'>[]): ModelEndpointConfig[] {
  const count = (key: (e: Omit<ModelEndpointConfig, 'id'>) => string) => {
    const counts = new Map<string, number>();
    for (const e of entries) counts.set(key(e), (counts.get(key(e)) ?? 0) + 1);
    return (e: Omit<ModelEndpointConfig, 'id'>) => counts.get(key(e)) ?? 0;
  };
  const byName = count((e) => e.model);
  const byHost = count((e) => `${e.model}@${new URL(e.baseURL).host}`);
  return entries.map((e) => {
    let id = e.model;
    if (byName(e) > 1)
      id = byHost(e) > 1 ? `${e.model}@${e.baseURL}` : `${e.model}@${new URL(e.baseURL).host}`;
    return { id, ...e };
  });
}

function sameEndpoint(a: string, b: string): boolean {
  return a.replace(/\/+$/, '') === b.replace(/\/+$/, '');
}

function bad(item: string, why: string): ConfigError {
  return badEntry(item, why, 'MAGPIE_FALLBACK_MODELS');
}

function badEntry(item: string, why: string, setting: string): ConfigError {
  // A user name or password in the entry's URL is never shown.
  const hidden = item.replace(/\/\/[^/\s]*@/g, '//…@');
  const shown = hidden.length > 80 ? `${hidden.slice(0, 77)}...` : hidden;
  return new ConfigError(`${setting} entry "${shown}": ${why}: fix it in .env (see .env.example)`);
}

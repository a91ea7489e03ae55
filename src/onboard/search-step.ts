/**
 * The optional web search step of `magpie onboard`: Brave, Tavily or SearXNG
 * with its key or URL, proved by one real query; or `off`. Sets
 * MAGPIE_WEB_SEARCH and BRAVE_API_KEY, TAVILY_API_KEY or SEARXNG_URL.
 */
import { SEARCH_BACKENDS, type SearchBackendName } from '../config/index.js';
import { ConfigError } from '../errors/index.js';
import { checkSearch } from './checks.js';
import { existingValue, maskSecret, missingFlag, progress, type StepContext } from './context.js';
import { checkBaseURL } from './endpoints.js';

/** The variable each backend needs. */
const NEEDS: Record<
  SearchBackendName,
  { variable: string; secret: boolean; flag: string; question: string }
> = {
  brave: {
    variable: 'BRAVE_API_KEY',
    secret: true,
    flag: '--web-search-key',
    question: 'Brave Search API key',
  },
  tavily: { variable: 'TAVILY_API_KEY', secret: true, flag: '--web-search-key', question: 'Tavily API key' },
  searxng: {
    variable: 'SEARXNG_URL',
    secret: false,
    flag: '--web-search-url',
    question: 'SearXNG URL (its json format must be on), e.g. http://127.0.0.1:8888',
  },
};

/** The web search step: from `--web-search` or a question; untouched under `--yes` without the flag. */
export async function searchStep(ctx: StepContext): Promise<void> {
  const backend = await chooseBackend(ctx);
  if (backend === undefined) return;
  if (backend === 'off') {
    ctx.updates.MAGPIE_WEB_SEARCH = 'off';
    progress(ctx, '  web search off');
    return;
  }
  const need = NEEDS[backend];
  const value = await askValue(ctx, backend);
  const label = await checkSearch(
    {
      backend,
      value,
      braveApiRoot: existingValue(ctx, 'BRAVE_API_ROOT') ?? 'https://api.search.brave.com',
      tavilyApiRoot: existingValue(ctx, 'TAVILY_API_ROOT') ?? 'https://api.tavily.com',
    },
    ctx.prompter?.signal,
  );
  progress(ctx, `✓ ${label} answered a test query`);
  ctx.updates.MAGPIE_WEB_SEARCH = backend;
  ctx.updates[need.variable] = value;
}

async function chooseBackend(ctx: StepContext): Promise<SearchBackendName | 'off' | undefined> {
  const flag = ctx.flags['web-search'];
  if (flag !== undefined) {
    const name = parseBackend(flag);
    if (name === undefined)
      throw new ConfigError(`--web-search must be ${SEARCH_BACKENDS.join(', ')} or off`);
    return name;
  }
  const prompter = ctx.prompter;
  if (!prompter) return undefined;
  const current = existingValue(ctx, 'MAGPIE_WEB_SEARCH');
  for (;;) {
    const answer = await prompter.ask(`Web search for the assistant: ${SEARCH_BACKENDS.join(', ')} or none`, {
      default: current ?? 'none',
    });
    if (answer === 'none' || answer === current) return answer === 'none' ? undefined : parseBackend(answer);
    const name = parseBackend(answer);
    if (name !== undefined) return name;
    prompter.say(`  answer ${SEARCH_BACKENDS.join(', ')}, off or none\n`);
  }
}

function parseBackend(text: string): SearchBackendName | 'off' | undefined {
  const name = text.trim().toLowerCase();
  if (name === 'off') return 'off';
  return (SEARCH_BACKENDS as readonly string[]).includes(name) ? (name as SearchBackendName) : undefined;
}

async function askValue(ctx: StepContext, backend: SearchBackendName): Promise<string> {
  const need = NEEDS[backend];
  const flag = need.secret ? ctx.flags['web-search-key'] : ctx.flags['web-search-url'];
  const current = existingValue(ctx, need.variable);
  let value = flag?.trim();
  if (value === undefined || value === '') {
    const prompter = ctx.prompter;
    if (!prompter) {
      if (!current) throw missingFlag(need.flag, `for --web-search ${backend}`);
      value = current;
    } else {
      const label = current && need.secret ? `Enter keeps ${maskSecret(current)}` : current;
      for (;;) {
        value = await prompter.ask(`${need.question}${need.secret ? ' (hidden)' : ''}`, {
          hidden: need.secret,
          default: current,
          defaultLabel: label,
        });
        if (value !== '') break;
        prompter.say(`  ${backend} needs it (Ctrl-C stops; nothing is written)\n`);
      }
    }
  }
  if (!need.secret) {
    const checked = checkBaseURL(value, { allowCredentials: true });
    if (!checked.ok) throw new ConfigError(`${need.flag}: ${checked.reason}`);
    return checked.url;
  }
  return value;
}

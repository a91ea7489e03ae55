/**
 * The endpoint choices of `magpie onboard` (by number or name, a known URL
 * recognised), the base URL check (http(s) only, no credentials in it), how a
 * secret is shown (never more than its first three and last four characters)
 * and how an id joins an allow list.
 */
import { describe, expect, it } from 'vitest';
import { shown } from '../../../src/cli/secret-variables.js';
import { maskSecret, mergeIds } from '../../../src/onboard/context.js';
import { checkBaseURL, ENDPOINT_PRESETS, presetByAnswer, presetFor } from '../../../src/onboard/endpoints.js';
import { chatModels, isListed } from '../../../src/onboard/model-step.js';

describe('endpoint presets', () => {
  it('offers the five known endpoints with their base URLs, then a custom one', () => {
    expect(ENDPOINT_PRESETS.map((p) => [p.id, p.baseURL])).toEqual([
      ['openai', 'https://api.openai.com/v1'],
      ['openrouter', 'https://openrouter.ai/api/v1'],
      ['ollama', 'http://127.0.0.1:11434/v1'],
      ['llamacpp', 'http://127.0.0.1:8080/v1'],
      ['vllm', 'http://127.0.0.1:8000/v1'],
      ['custom', undefined],
    ]);
    expect(ENDPOINT_PRESETS.filter((p) => !p.needsKey).map((p) => p.id)).toEqual([
      'ollama',
      'llamacpp',
      'vllm',
    ]);
  });

  it('takes a number or a name; anything else is undefined', () => {
    expect(presetByAnswer('3')?.id).toBe('ollama');
    expect(presetByAnswer(' OpenRouter ')?.id).toBe('openrouter');
    expect(presetByAnswer('0')).toBeUndefined();
    expect(presetByAnswer('7')).toBeUndefined();
    expect(presetByAnswer('1.5')).toBeUndefined();
    expect(presetByAnswer('gpt')).toBeUndefined();
  });

  it('recognises a known URL (trailing slash or not); any other is custom', () => {
    expect(presetFor('http://127.0.0.1:11434/v1/').id).toBe('ollama');
    expect(presetFor('http://10.0.0.2:11434/v1').id).toBe('custom');
    expect(presetFor(undefined).id).toBe('custom');
  });
});

describe('checkBaseURL', () => {
  it('accepts http(s) and drops a trailing slash', () => {
    expect(checkBaseURL(' http://127.0.0.1:8080/v1/ ')).toEqual({
      ok: true,
      url: 'http://127.0.0.1:8080/v1',
    });
  });

  it('refuses what is not a URL, other schemes, and a user name or password without echoing it', () => {
    expect(checkBaseURL('localhost:8080').ok).toBe(false);
    expect(checkBaseURL('file:///etc/passwd').ok).toBe(false);
    const withPassword = checkBaseURL('https://user:hunter2@example.com/v1');
    expect(withPassword.ok).toBe(false);
    expect(JSON.stringify(withPassword)).not.toContain('hunter2');
  });

  it('allows a user name and password only when asked to (a SearXNG behind basic auth)', () => {
    expect(checkBaseURL('https://me:pw@searx.example', { allowCredentials: true })).toEqual({
      ok: true,
      url: 'https://me:pw@searx.example',
    });
  });
});

describe('secrets as shown', () => {
  it('a long secret shows its first three and last four characters only', () => {
    expect(maskSecret('sk-proj-abcdefgh12345678')).toBe('sk-…5678');
  });

  it('a short secret shows at most its last two characters', () => {
    expect(maskSecret('abcdefghij')).toBe('…ij');
    expect(maskSecret('abc')).toBe('…');
  });

  it('only secret variables are masked', () => {
    expect(shown('TELEGRAM_BOT_TOKEN', '123456:ABCDEFGHIJKLMNOP')).toBe('123…MNOP');
    expect(shown('MAGPIE_MODEL', 'gpt-4o-mini')).toBe('gpt-4o-mini');
    expect(shown('OPENAI_API_KEY', 'none')).toBe('none');
    expect(shown('SEARXNG_URL', 'https://me:hunter2@searx.example')).not.toContain('hunter2');
  });
});

describe('mergeIds', () => {
  it('keeps existing entries first and adds without duplicates', () => {
    expect(mergeIds('111, @bob', ['222'])).toBe('111,@bob,222');
    expect(mergeIds('111', ['111'])).toBe('111');
    expect(mergeIds(undefined, ['5'])).toBe('5');
  });
});

describe('isListed', () => {
  it("takes a bare name for Ollama's :latest tag, and nothing looser", () => {
    expect(isListed('llama3.1', ['llama3.1:latest'])).toBe(true);
    expect(isListed('llama3.1', ['llama3.1:8b'])).toBe(false);
    expect(isListed('llama3.1:8b', ['llama3.1:latest'])).toBe(false);
    expect(isListed('gpt-4o', ['gpt-4o-mini'])).toBe(false);
  });
});

describe('chatModels', () => {
  it('offers chat models only, sorted', () => {
    const listed = [
      'whisper-1',
      'gpt-4o-mini',
      'text-embedding-3-small',
      'dall-e-3',
      'gpt-4o',
      'tts-1',
      'omni-moderation-latest',
    ];
    expect(chatModels(listed)).toEqual(['gpt-4o', 'gpt-4o-mini']);
  });

  it('offers the whole list when nothing looks like a chat model', () => {
    expect(chatModels(['nomic-embed-text'])).toEqual(['nomic-embed-text']);
  });
});

/** The one failure policy of a turn: what is redone, and the line the user reads otherwise. */
import { describe, expect, it } from 'vitest';
import { failureReply, isTransient } from '../../../src/agent/failure-reply.js';
import { AppError, emptyResponseError, ProviderError } from '../../../src/errors/index.js';
import { ModelsUnavailableError } from '../../../src/providers/fallback-failures.js';

describe('failure replies', () => {
  it('gives the user one clear line per permanent failure, decided by code', () => {
    const auth = new ProviderError('PROVIDER_AUTH', 'the API key was refused (401)', { status: 401 });
    expect(failureReply(auth)).toBe(
      'Sorry, the model endpoint refused my API key (401); the owner needs to check OPENAI_API_KEY.',
    );
    const down = new ProviderError('PROVIDER_SERVER', 'failed (503)', { status: 503, transient: true });
    expect(failureReply(down)).toBe('Sorry, my model endpoint is failing (503); please try again later.');
    expect(failureReply(emptyResponseError('finish_reason stop'))).toMatch(
      /^Sorry, my model sent an empty answer/,
    );
  });

  it('never shows an unexpected error’s own text (paths, internals) to the chat', () => {
    const reply = failureReply(
      new TypeError("Cannot read properties of undefined (reading 'x') at /srv/magpie/a.js"),
    );
    expect(reply).toBe('Sorry, something went wrong on my side; the log has the details.');
  });

  it('answers "no model is answering" without naming endpoints when every model failed', () => {
    const model = { id: 'main', model: 'm', baseURL: 'http://10.0.0.5/v1', vision: false };
    const err = new ModelsUnavailableError([
      {
        model,
        error: new AppError('PROVIDER_UNREACHABLE', 'http://10.0.0.5/v1 is down', { transient: true }),
      },
    ]);
    expect(failureReply(err)).toMatch(/^Sorry, my model is not answering right now/);
    expect(failureReply(err)).not.toContain('10.0.0.5');
  });

  it('redoes what may pass: transient AppErrors and unexpected failures, never a refused key', () => {
    expect(isTransient(new ProviderError('PROVIDER_AUTH', 'refused', { status: 401 }))).toBe(false);
    expect(isTransient(new ProviderError('PROVIDER_SERVER', 'x', { transient: true }))).toBe(true);
    expect(isTransient(new Error('socket hang up'))).toBe(true);
  });
});

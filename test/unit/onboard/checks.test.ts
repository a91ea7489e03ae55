/**
 * The live checks of `magpie onboard` against the fake servers, each failure
 * one line with its exit code (2: the answer is wrong, 3: the server is not
 * there or failing) and never the secret: the model list and the one-token
 * call, Telegram's getMe (a token that would change the request path is
 * refused before any request) and Discord's /users/@me.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discordBot } from '../../../src/channels/discord/onboard.js';
import { telegramBot } from '../../../src/channels/telegram/onboard.js';
import { AppError, ConfigError } from '../../../src/errors/index.js';
import { chatOnce, listModels } from '../../../src/onboard/checks.js';
import { closedPort } from '../../e2e/cli-helpers.js';
import { type FakeDiscord, startFakeDiscord } from '../../fakes/discord-server.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../fakes/openai-server.js';
import { rejectedWith } from '../../fakes/rejection.js';
import { type FakeTelegram, startFakeTelegram } from '../../fakes/telegram-server.js';

const KEY = 'sk-checks-secret-0123456789';
let openai: FakeOpenAI;
let telegram: FakeTelegram;
let discord: FakeDiscord;

beforeAll(async () => {
  openai = await startFakeOpenAI({ apiKey: KEY, models: ['m1', 'm2'] });
  telegram = await startFakeTelegram({ token: '12345:checks-token', botUsername: 'checks_bot' });
  discord = await startFakeDiscord({ token: 'checks.discord.token' });
});
afterAll(async () => {
  await Promise.all([openai.close(), telegram.close(), discord.close()]);
});

const failure = (promise: Promise<unknown>) => rejectedWith(AppError, promise);

describe('model checks', () => {
  const endpoint = (apiKey = KEY) => ({ baseURL: openai.baseURL, apiKey, keySource: 'the key you typed' });

  it('lists the models with the right key', async () => {
    expect(await listModels(endpoint())).toEqual({ models: ['m1', 'm2'] });
  });

  it('a refused key is exit 2 naming where the key came from, without the key', async () => {
    const err = await failure(listModels(endpoint('sk-wrong-0123456789abcdef')));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toBe(`${openai.baseURL} refused the API key (401): check the key you typed`);
  });

  it('an endpoint nobody listens on is exit 3', async () => {
    const url = `http://127.0.0.1:${await closedPort()}/v1`;
    const err = await failure(listModels({ baseURL: url, apiKey: KEY, keySource: 'x' }));
    expect(err.exitCode).toBe(3);
    expect(err.message).toContain('ECONNREFUSED');
  });

  it('the one-token call asks for one token of the chosen model', async () => {
    await chatOnce(endpoint(), 'm2');
    const body = openai.requests.at(-1)?.body;
    expect(body.model).toBe('m2');
    expect(body.max_tokens ?? body.max_completion_tokens).toBe(1);
  });

  it('a model the endpoint does not serve is exit 2 naming it', async () => {
    openai.enqueue({
      status: 404,
      error: { message: 'The model `m9` does not exist', code: 'model_not_found' },
    });
    const err = await failure(chatOnce(endpoint(), 'm9'));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toMatch(/^the model "m9" cannot be used at .*does not exist/);
  });

  it('a failing server is exit 3', async () => {
    openai.enqueue({ status: 503, error: { message: 'overloaded' } });
    const err = await failure(chatOnce(endpoint(), 'm1'));
    expect(err.exitCode).toBe(3);
    expect(err.message).toContain('overloaded');
  });
});

describe('bot checks', () => {
  it('Telegram: getMe names the bot', async () => {
    expect(await telegramBot(telegram.token, telegram.apiRoot)).toEqual({
      id: String(telegram.bot.id),
      username: 'checks_bot',
    });
  });

  it('Telegram: a wrong token is exit 2, without the token', async () => {
    const err = await failure(telegramBot('12345:wrong-token', telegram.apiRoot));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain('getMe answered 401');
    expect(err.message).not.toContain('wrong-token');
  });

  it('Telegram: a token that would change the request path or query is refused before any request', async () => {
    const before = telegram.calls.length;
    for (const bad of [
      `${telegram.token}/../getUpdates`,
      `${telegram.token}?x=1`,
      `${telegram.token}#`,
      'nocolon',
    ]) {
      expect(await failure(telegramBot(bad, telegram.apiRoot))).toBeInstanceOf(ConfigError);
    }
    expect(telegram.calls.length).toBe(before);
  });

  it('Telegram: an API root nobody listens on is exit 3 and the message holds no token', async () => {
    const root = `http://127.0.0.1:${await closedPort()}`;
    const err = await failure(telegramBot(telegram.token, root));
    expect(err.exitCode).toBe(3);
    expect(err.message).toBe(`cannot reach Telegram at ${root} (ECONNREFUSED)`);
  });

  it('Discord: /users/@me names the bot; a wrong token is exit 2', async () => {
    expect(await discordBot('checks.discord.token', discord.apiRoot)).toMatchObject({
      username: discord.botUsername,
    });
    const err = await failure(discordBot('wrong.token', discord.apiRoot));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain('answered 401');
  });

  it('Discord: a token with characters that do not belong in a header is refused before any request', async () => {
    const err = await failure(discordBot('a\r\nX-Evil: 1', discord.apiRoot));
    expect(err).toBeInstanceOf(ConfigError);
  });
});

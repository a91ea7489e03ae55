/**
 * The WhatsApp step of `magpie onboard` against the fake Graph API, with
 * flags and no questions (`--yes`): the token checked with the phone number
 * id, the variables it sets (a random verify token when none is given), the
 * numbers read, and a refused token stopping it with nothing set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkNumberText, whatsappStep } from '../../../src/channels/whatsapp/onboard.js';
import { ConfigError } from '../../../src/errors/index.js';
import type { OnboardFlags, StepContext } from '../../../src/onboard/context.js';
import { type FakeWhatsApp, startFakeWhatsApp } from '../../fakes/whatsapp-server.js';

let fake: FakeWhatsApp;
beforeAll(async () => {
  fake = await startFakeWhatsApp({ token: 'EAAG-onboard', appSecret: 'onboard-secret' });
});
afterAll(() => fake.close());

function context(flags: OnboardFlags, existing: Record<string, string> = {}) {
  let out = '';
  const ctx: StepContext = {
    flags,
    existing,
    prompter: undefined,
    out: { write: (text: string) => (out += text) },
    captureTimeoutMs: 1000,
    updates: {},
  };
  return { ctx, out: () => out };
}

describe('whatsappStep', () => {
  it('checks the token for the number and sets the variables', async () => {
    const { ctx, out } = context({
      'whatsapp-token': 'EAAG-onboard',
      'whatsapp-phone-number-id': fake.phoneNumberId,
      'whatsapp-app-secret': 'onboard-secret',
      'whatsapp-allow-from': '+49 170 1234567, *',
      'whatsapp-api-root': fake.apiRoot,
    });
    await whatsappStep(ctx);
    expect(ctx.updates).toMatchObject({
      WHATSAPP_ACCESS_TOKEN: 'EAAG-onboard',
      WHATSAPP_PHONE_NUMBER_ID: fake.phoneNumberId,
      WHATSAPP_APP_SECRET: 'onboard-secret',
      WHATSAPP_VERIFY_TOKEN: expect.stringMatching(/^[\w-]{24}$/),
      WHATSAPP_ALLOW_FROM: '+491701234567,*',
      WHATSAPP_API_ROOT: fake.apiRoot,
      MAGPIE_WEBHOOK_PORT: '8790',
    });
    expect(out()).toContain(`✓ WhatsApp accepts the token for ${fake.displayNumber} (Magpie Test)`);
    expect(out()).toContain('/webhooks/whatsapp');
    expect(out()).not.toContain('EAAG-onboard');
    expect(out()).not.toContain('onboard-secret');
  });

  it('is skipped without a token, and keeps the verify token and port .env holds', async () => {
    const skipped = context({});
    await whatsappStep(skipped.ctx);
    expect(skipped.ctx.updates).toEqual({});
    const kept = context(
      {
        'whatsapp-token': 'EAAG-onboard',
        'whatsapp-phone-number-id': fake.phoneNumberId,
        'whatsapp-api-root': fake.apiRoot,
      },
      { WHATSAPP_APP_SECRET: 'from-env', WHATSAPP_VERIFY_TOKEN: 'kept-verify', MAGPIE_WEBHOOK_PORT: '9000' },
    );
    await whatsappStep(kept.ctx);
    expect(kept.ctx.updates).toMatchObject({
      WHATSAPP_APP_SECRET: 'from-env',
      WHATSAPP_VERIFY_TOKEN: 'kept-verify',
      MAGPIE_WEBHOOK_PORT: '9000',
    });
  });

  it('stops on a refused token with one line, setting nothing', async () => {
    const { ctx } = context({
      'whatsapp-token': 'EAAG-wrong',
      'whatsapp-phone-number-id': fake.phoneNumberId,
      'whatsapp-app-secret': 'onboard-secret',
      'whatsapp-api-root': fake.apiRoot,
    });
    const err = await whatsappStep(ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toMatch(
      /^WhatsApp refused the token or the phone number id \(HTTP 401, code 190/,
    );
    expect((err as ConfigError).message).not.toContain('EAAG-wrong');
    expect(ctx.updates).toEqual({});
  });

  it('reads numbers in international form, refuses others', () => {
    expect(checkNumberText('+1 (555) 010-0000')).toBe('+15550100000');
    expect(checkNumberText('*')).toBe('*');
    expect(() => checkNumberText('0170 123')).toThrow(ConfigError);
  });
});

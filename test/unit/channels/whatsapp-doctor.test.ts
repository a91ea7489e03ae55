/** `magpie doctor`'s WhatsApp check against the fake Graph API: the token for the number, the webhook settings; no secret printed. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { whatsappCheck } from '../../../src/channels/whatsapp/doctor.js';
import { type FakeWhatsApp, startFakeWhatsApp } from '../../fakes/whatsapp-server.js';

let fake: FakeWhatsApp;
const signal = new AbortController().signal;
beforeAll(async () => {
  fake = await startFakeWhatsApp({ token: 'EAAG-doctor', appSecret: 'doctor-secret' });
});
afterAll(() => fake.close());

const settings = () => ({
  accessToken: 'EAAG-doctor',
  phoneNumberId: fake.phoneNumberId,
  appSecret: 'doctor-secret',
  verifyToken: 'doctor-verify',
  apiRoot: fake.apiRoot,
});
const webhook = { port: 8790, host: '127.0.0.1' };

it('passes with the token accepted for the number and the webhook settings complete', async () => {
  expect(await whatsappCheck(settings(), webhook).run(signal)).toEqual([
    { status: 'ok', detail: `number ${fake.displayNumber} (Magpie Test)` },
    {
      status: 'ok',
      detail:
        'webhooks on 127.0.0.1:8790/webhooks/whatsapp (Meta reaches them through your HTTPS proxy or tunnel)',
    },
  ]);
  expect(fake.calls.at(-1)).toMatchObject({ method: 'GET', path: `/${fake.phoneNumberId}`, status: 200 });
});

it('fails on a refused token or an unknown number id, never printing the token', async () => {
  const refused = await whatsappCheck({ ...settings(), accessToken: 'EAAG-wrong' }, webhook).run(signal);
  expect(refused).toMatchObject({
    status: 'fail',
    detail: expect.stringContaining('answered 401 (code 190)'),
  });
  expect(JSON.stringify(refused)).not.toContain('EAAG-wrong');
  expect(await whatsappCheck({ ...settings(), phoneNumberId: '123' }, webhook).run(signal)).toMatchObject({
    status: 'fail',
  });
  expect(
    await whatsappCheck({ ...settings(), apiRoot: 'http://127.0.0.1:1/v21.0' }, webhook).run(signal),
  ).toMatchObject({ status: 'fail', detail: 'cannot reach http://127.0.0.1:1/v21.0' });
});

it('fails when webhooks cannot be taken, and skips without a token', async () => {
  const results = await whatsappCheck(
    { ...settings(), appSecret: undefined },
    { port: undefined, host: '127.0.0.1' },
  ).run(signal);
  expect(results).toEqual([
    expect.objectContaining({ status: 'ok' }),
    expect.objectContaining({
      status: 'fail',
      detail: 'WHATSAPP_APP_SECRET, MAGPIE_WEBHOOK_PORT not set: no webhook can be taken',
    }),
  ]);
  expect(await whatsappCheck({ ...settings(), accessToken: undefined }, webhook).run(signal)).toMatchObject({
    status: 'skip',
  });
});

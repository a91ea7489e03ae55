/** `magpie doctor`'s Slack check against the fake Slack: both tokens, never printed. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { slackCheck } from '../../../src/channels/slack/doctor.js';
import { type FakeSlack, startFakeSlack } from '../../fakes/slack-server.js';

let fake: FakeSlack;
const signal = new AbortController().signal;
beforeAll(async () => {
  fake = await startFakeSlack({ botToken: 'xoxb-doctor', appToken: 'xapp-doctor' });
});
afterAll(() => fake.close());

it('passes with both tokens accepted, fails on a refused app token, skips without a bot token', async () => {
  const apiRoot = fake.apiRoot;
  expect(
    await slackCheck({ token: 'xoxb-doctor', appToken: 'xapp-doctor', apiRoot }).run(signal),
  ).toMatchObject({
    status: 'ok',
    detail: 'bot @magpie, Socket Mode token accepted',
  });
  const refused = await slackCheck({ token: 'xoxb-doctor', appToken: 'xapp-wrong', apiRoot }).run(signal);
  expect(refused).toMatchObject({ status: 'fail' });
  expect(JSON.stringify(refused)).not.toContain('xapp-wrong');
  expect(
    await slackCheck({ token: 'xoxb-wrong', appToken: 'xapp-doctor', apiRoot }).run(signal),
  ).toMatchObject({
    status: 'fail',
  });
  expect(await slackCheck({ token: undefined, appToken: undefined, apiRoot }).run(signal)).toMatchObject({
    status: 'skip',
  });
  expect(fake.calls.map((c) => c.method)).toContain('apps.connections.open');
});

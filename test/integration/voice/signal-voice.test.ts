/**
 * Voice replies on Signal through the real stack: the fake signal-cli
 * daemon's event stream → real adapter → Bus (Redis) → turn worker and agent
 * → fake OpenAI (transcription, and /v1/audio/speech answering real OGG/Opus
 * made by espeak-ng + opusenc in the test set-up) → signal-cli's JSON-RPC
 * `send` with the OGG/Opus as an `attachments` data URI, after the text.
 * A typed message under `/voice auto` gets text only.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { silentLogger } from '../../../src/log/index.js';
import { roleConfig } from '../../fakes/config.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { opusAudio } from '../../fakes/opus-audio.js';
import { stopRoleAndFakes } from '../../fakes/role.js';
import { type FakeSignalCli, startFakeSignalCli } from '../../fakes/signal-cli.js';

const OWNER = { uuid: '11111111-1111-4111-8111-111111111111', number: '+15550001111', name: 'Owner' };
const OTHER = { uuid: '22222222-2222-4222-8222-222222222222', number: '+15550002222', name: 'Other' };
let fake: FakeSignalCli;
let openai: FakeOpenAI;
let role: RunningRole | undefined;
let workspace: string;

beforeAll(async () => {
  fake = await startFakeSignalCli();
  openai = await startFakeOpenAI({
    speechAudio: opusAudio(),
    transcript: 'what time is it',
    responder: (req) => ({
      content: lastUserText(req).includes('what time is it') ? 'It is **noon**.' : 'Typed answer.',
    }),
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-signal-voice-'));
  const config = roleConfig(
    { workspace, openai, prefix: `test-${randomUUID()}` },
    {
      SIGNAL_RPC_URL: fake.url,
      SIGNAL_ACCOUNT: fake.account,
      SIGNAL_ALLOW_FROM: `${OWNER.number},${OTHER.number}`,
      MAGPIE_TRANSCRIBE_MODEL: 'whisper-1',
      MAGPIE_TTS: 'endpoint',
    },
  );
  role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 2 });
}, 60_000);

afterAll(() => stopRoleAndFakes(role, [fake, openai], workspace));

describe('voice replies on signal', () => {
  it('answers a voice note with text, then the OGG/Opus as a data-URI attachment', async () => {
    fake.addAttachment('voice-in-1', opusAudio());
    fake.deliver({
      from: OWNER,
      attachments: [
        { id: 'voice-in-1', contentType: 'audio/ogg', filename: 'voice.ogg', size: opusAudio().length },
      ],
    });
    await fake.waitFor(() => fake.messages(OWNER.uuid).some((m) => m.attachments), 20_000);
    const mine = fake.messages(OWNER.uuid);
    expect(mine).toHaveLength(2);
    expect(mine[0]?.text).toContain('noon');
    expect(mine[1]?.text).toBe('');
    expect(mine[1]?.attachments).toHaveLength(1);
    const [file] = mine[1]?.attachments ?? [];
    expect(file).toMatchObject({ contentType: 'audio/ogg', filename: 'reply.ogg' });
    expect(file?.bytes.equals(opusAudio())).toBe(true);
    expect(openai.transcriptionRequests.at(-1)?.bytes.equals(opusAudio())).toBe(true);
  });

  it('answers typed text with text only (/voice auto)', async () => {
    fake.deliver({ from: OTHER, text: 'hello there' });
    await fake.waitFor(() => fake.messages(OTHER.uuid).length === 1, 20_000);
    // A second turn of the same chat starts only after the first one (its voice step included) is over.
    fake.deliver({ from: OTHER, text: 'and again' });
    await fake.waitFor(() => fake.messages(OTHER.uuid).length === 2, 20_000);
    expect(
      fake.messages(OTHER.uuid).every((m) => m.attachments === undefined && m.text.includes('Typed')),
    ).toBe(true);
  });
});

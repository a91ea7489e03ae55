/**
 * `magpie send --voice`'s path: the CLI client asks for the answer spoken
 * (metadata.voice), the daemon (the real `start` role: Redis, worker, CLI
 * channel) answers with the text and then the voice, or with the reason
 * there is none. Speech from the fake /v1/audio/speech (real OGG/Opus).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { Bus } from '../../../src/bus/bus.js';
import { sendAndWait } from '../../../src/channels/cli/client.js';
import { silentLogger } from '../../../src/log/index.js';
import type { OutboundMessage } from '../../../src/messages/messages.js';
import { spokenAudio } from '../../../src/voice/outbound-audio.js';
import { roleConfig } from '../../fakes/config.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../fakes/openai-server.js';
import { opusAudio } from '../../fakes/opus-audio.js';
import { stopRoleAndFakes } from '../../fakes/role.js';

let openai: FakeOpenAI;
let role: RunningRole | undefined;
let client: Bus;
let workspace: string;

beforeAll(async () => {
  openai = await startFakeOpenAI({
    speechAudio: opusAudio(),
    responder: () => ({ content: 'Spoken on request.' }),
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-cli-voice-'));
  const config = roleConfig(
    { workspace, openai, prefix: `test-${randomUUID()}` },
    { MAGPIE_TTS: 'endpoint' },
  );
  role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 2 });
  client = await Bus.connect({ config, logger: silentLogger() });
}, 60_000);

afterAll(async () => {
  await client?.close();
  await stopRoleAndFakes(role, [openai], workspace);
});

describe('magpie send --voice', () => {
  it('gets the text reply, then the spoken reply as OGG/Opus', async () => {
    let voice: OutboundMessage | undefined;
    const reply = await sendAndWait(client, {
      content: 'say something',
      chatId: 'voice-1',
      timeoutMs: 20_000,
      onVoice: (m) => (voice = m),
    });
    expect(reply.content).toBe('Spoken on request.');
    expect(spokenAudio(voice!)!.bytes.equals(opusAudio())).toBe(true);
  });

  it('is told why when the speech endpoint fails, without waiting for its time-out', async () => {
    openai.failSpeech(2);
    let voice: OutboundMessage | undefined;
    const started = Date.now();
    const reply = await sendAndWait(client, {
      content: 'say it again',
      chatId: 'voice-2',
      timeoutMs: 20_000,
      onVoice: (m) => (voice = m),
    });
    expect(reply.content).toBe('Spoken on request.');
    expect(voice?.media).toBeUndefined();
    expect(voice?.metadata.voiceFailed).toMatch(/^speech failed: /);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('speaks nothing for a plain send (text in, text out)', async () => {
    const before = openai.speechRequests.length;
    const reply = await sendAndWait(client, { content: 'text only', chatId: 'voice-3', timeoutMs: 20_000 });
    expect(reply.content).toBe('Spoken on request.');
    // The next turn of the chat starts after this one has ended, its voice step included.
    await sendAndWait(client, { content: 'and again', chatId: 'voice-3', timeoutMs: 20_000 });
    expect(openai.speechRequests.length).toBe(before);
  });
});

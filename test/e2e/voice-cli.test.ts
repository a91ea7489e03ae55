/**
 * `magpie agent -m … --voice FILE`: the built CLI as a subprocess against
 * the fake OpenAI server (its /v1/audio/speech answers real OGG/Opus), and
 * offline with espeak-ng. The text always goes to stdout; the file is whole
 * or absent.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { opusAudio } from '../fakes/opus-audio.js';
import { initedFolder, removeFolder } from '../fakes/workspace.js';
import { collect, type Outcome } from './cli-helpers.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = path.join(root, 'dist', 'cli', 'bin.js');
const exec = promisify(execFile);

let dir: string;
let workspace: string;
let fake: FakeOpenAI;

function agent(args: string[], extraEnv: Record<string, string>): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, 'agent', ...args], {
      cwd: dir,
      env: {
        PATH: process.env.PATH,
        HOME: dir,
        OPENAI_API_KEY: 'test-key',
        OPENAI_BASE_URL: fake.baseURL,
        MAGPIE_WORKSPACE: workspace,
        ...extraEnv,
      },
    });
    collect(child).then(resolve, reject);
    child.stdin.end('');
  });
}

beforeAll(async () => {
  await exec('npm', ['run', 'build', '--silent'], { cwd: root, timeout: 120_000 });
  ({ dir, workspace } = await initedFolder('magpie-voice-cli-'));
}, 150_000);

afterAll(() => removeFolder(dir));

afterEach(async () => {
  await fake?.close();
});

describe('magpie agent --voice', () => {
  it('prints the answer and writes its spoken form from the speech endpoint to FILE', async () => {
    fake = await startFakeOpenAI({
      speechAudio: opusAudio(),
      responder: () => ({ content: 'It is **sunny**.' }),
    });
    const file = path.join(dir, 'endpoint.ogg');
    const out = await agent(['-m', 'weather?', '--voice', file], {
      MAGPIE_TTS: 'endpoint',
      MAGPIE_TTS_VOICE: 'nova',
    });
    expect(out).toMatchObject({ code: 0, stdout: 'It is **sunny**.\n' });
    expect((await readFile(file)).equals(opusAudio())).toBe(true);
    expect(fake.speechRequests).toEqual([
      { model: 'tts-1', voice: 'nova', input: 'It is sunny.', response_format: 'opus' },
    ]);
  });

  it('speaks offline with espeak-ng', async () => {
    fake = await startFakeOpenAI({ responder: () => ({ content: 'Offline and fine.' }) });
    const file = path.join(dir, 'espeak.ogg');
    const out = await agent(['-m', 'hello', '--voice', file], { MAGPIE_TTS: 'espeak' });
    expect(out.code).toBe(0);
    const ogg = await readFile(file);
    expect(ogg.subarray(0, 4).toString('latin1')).toBe('OggS');
    expect(ogg.includes('OpusHead')).toBe(true);
  });

  it('keeps the text and exits 1 with one line when the speech endpoint fails; no file', async () => {
    fake = await startFakeOpenAI({
      speechAudio: opusAudio(),
      responder: () => ({ content: 'Text survives.' }),
    });
    fake.failSpeech(2);
    const file = path.join(dir, 'failed.ogg');
    const out = await agent(['-m', 'hi', '--voice', file], { MAGPIE_TTS: 'endpoint' });
    expect(out).toMatchObject({ code: 1, stdout: 'Text survives.\n' });
    expect(out.stderr).toMatch(/^magpie: the answer was not spoken: speech failed: .*\n$/);
    expect(existsSync(file)).toBe(false);
  });

  it('refuses --voice without an engine, or a voice name espeak-ng would not take, with one line (exit 2)', async () => {
    fake = await startFakeOpenAI();
    const off = await agent(['-m', 'hi', '--voice', path.join(dir, 'x.ogg')], {});
    expect(off.code).toBe(2);
    expect(off.stderr).toContain('--voice needs a speech engine: set MAGPIE_TTS=espeak');
    const bad = await agent(['-m', 'hi', '--voice', path.join(dir, 'y.ogg')], {
      MAGPIE_TTS: 'espeak',
      MAGPIE_TTS_VOICE: 'en --stdout',
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('MAGPIE_TTS_VOICE "en --stdout" is not an espeak-ng voice');
    expect(fake.requests).toHaveLength(0);
  });
});

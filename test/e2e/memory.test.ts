/**
 * Memory search through the built CLI: `magpie memory search` (text, --json,
 * --since/--until, bad usage with exit 2), `magpie memory reindex`, several
 * `magpie memory` processes at once, and `magpie agent` whose model calls
 * memory_search and reads a dated result. The index lives in the run's
 * temporary XDG_STATE_HOME, never in the workspace.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { collect, type Outcome } from './cli-helpers.js';
import { BIN, build, stateHome, tempWorkspace } from './daemon-helpers.js';

let workspace: string;
let fake: FakeOpenAI;

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    XDG_STATE_HOME: stateHome(),
    MAGPIE_WORKSPACE: workspace,
    MAGPIE_TIMEZONE: 'Europe/Lisbon',
    OPENAI_API_KEY: 'sk-memory-e2e',
    OPENAI_BASE_URL: fake.baseURL,
    MAGPIE_MODEL: 'fake-model',
    ...extra,
  };
}

/** Runs `magpie <args>` and collects everything it printed once it has closed its output. */
function magpie(args: string[]): Promise<Outcome> {
  const child = spawn(process.execPath, [BIN, ...args], { env: env(), cwd: path.dirname(workspace) });
  return collect(child);
}

/** Every file under a folder, relative. */
function listAll(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listAll(path.join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`],
  );
}

beforeAll(async () => {
  build();
  fake = await startFakeOpenAI();
  workspace = tempWorkspace();
  mkdirSync(path.join(workspace, 'memory', '202405'), { recursive: true });
  writeFileSync(
    path.join(workspace, 'memory', '202405', '20240512.md'),
    '# 2024-05-12\n\n- Lunch with Ana.\n- Marta moved to Coimbra; her flat is on Rua Direita.\n',
  );
  mkdirSync(path.join(workspace, 'memory', '202409'), { recursive: true });
  writeFileSync(
    path.join(workspace, 'memory', '202409', '20240902.md'),
    '# 2024-09-02\n\n- Visited Marta in Coimbra.\n',
  );
  mkdirSync(path.join(workspace, 'sessions'), { recursive: true });
  writeFileSync(
    path.join(workspace, 'sessions', 'telegram_42.jsonl'),
    `${JSON.stringify({ role: 'user', content: 'The boiler is leaking again', ts: '2024-04-20T09:00:00Z' })}\n`,
  );
}, 120_000);

afterAll(async () => {
  await fake?.close();
});

describe('magpie memory', () => {
  it('search prints each hit with file:line, date and text; nothing goes into the workspace', async () => {
    const before = listAll(workspace);
    const out = await magpie(['memory', 'search', 'when did Marta move to Coimbra?']);
    expect(out).toMatchObject({ code: 0, stderr: '' });
    expect(out.stdout).toBe(
      'memory/202405/20240512.md:4  daily note of 2024-05-12\n' +
        '   - Marta moved to Coimbra; her flat is on Rua Direita.\n\n' +
        'memory/202409/20240902.md:3  daily note of 2024-09-02\n' +
        '   - Visited Marta in Coimbra.\n',
    );
    expect(listAll(workspace)).toEqual(before);
  }, 60_000);

  it('search --json, --limit, --since and --until', async () => {
    const out = await magpie([
      'memory',
      'search',
      'Marta Coimbra',
      '--json',
      '--since',
      '2024-06-01',
      '--limit',
      '5',
    ]);
    expect(out.code).toBe(0);
    const json = JSON.parse(out.stdout);
    expect(json).toMatchObject({
      query: 'Marta Coimbra',
      since: '2024-06-01',
      hits: [
        {
          kind: 'note',
          path: 'memory/202409/20240902.md',
          line: 3,
          date: '2024-09-02',
          snippet: '- Visited Marta in Coimbra.',
        },
      ],
    });
    expect(json.hits).toHaveLength(1);
    const boiler = JSON.parse(
      (await magpie(['memory', 'search', 'boiler', '--json', '--until', '2024-04-30'])).stdout,
    );
    expect(boiler.hits).toMatchObject([
      { kind: 'session', session: 'telegram:42', role: 'user', date: '2024-04-20', time: '10:00' },
    ]);
  }, 60_000);

  it('says so when nothing matches (exit 0)', async () => {
    const out = await magpie(['memory', 'search', 'zeppelin']);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(
      /^No results for "zeppelin" in (MEMORY\.md, )?2 daily notes and 1 conversation log\./,
    );
  }, 60_000);

  it('bad usage is one line on stderr and exit 2', async () => {
    for (const args of [
      ['memory'],
      ['memory', 'search'],
      ['memory', 'search', 'x', '--since', 'yesterday'],
      ['memory', 'search', 'x', '--limit', '500'],
      ['memory', 'search', '?!'],
      ['memory', 'reindex', 'extra'],
      ['memory', 'search', 'x', '--bogus'],
    ]) {
      const out = await magpie(args);
      expect(out.code, args.join(' ')).toBe(2);
      expect(out.stdout).toBe('');
      expect(out.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(out.stderr).toMatch(/^magpie: magpie memory/);
    }
    expect((await magpie(['memory', '--help'])).code).toBe(0);
  }, 120_000);

  it('reindex rebuilds the index in the state folder and says what it holds', async () => {
    const out = await magpie(['memory', 'reindex']);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(
      /^Indexed (MEMORY\.md, )?2 daily notes and 1 conversation log: \d+ passages in [\d.]+ s \(/,
    );
    expect(out.stdout).toContain(path.join(stateHome(), 'magpie'));
    expect(out.stdout).toContain(`${path.sep}memory-index${path.sep}index.db`);
    expect(out.stdout).not.toContain(workspace);
  }, 60_000);

  it('several processes at once (reindex and searches) all succeed with the right answer', async () => {
    const runs = await Promise.all([
      magpie(['memory', 'reindex']),
      magpie(['memory', 'search', 'Rua Direita', '--json']),
      magpie(['memory', 'reindex']),
      magpie(['memory', 'search', 'Rua Direita', '--json']),
    ]);
    for (const run of runs) expect(run, run.stderr).toMatchObject({ code: 0, stderr: '' });
    for (const search of [runs[1]!, runs[3]!]) {
      expect(JSON.parse(search.stdout).hits.map((h: { date: string }) => h.date)).toEqual(['2024-05-12']);
    }
  }, 120_000);
});

describe('memory_search in a turn', () => {
  it('is offered to the model, and its dated result reaches the model', async () => {
    fake.enqueue(
      { toolCalls: [{ name: 'memory_search', arguments: JSON.stringify({ query: 'Marta moved Coimbra' }) }] },
      { content: 'Marta moved to Coimbra on 12 May 2024.' },
    );
    const out = await magpie(['agent', '--chat', 'memory', '-m', 'When did my sister move to Coimbra?']);
    expect(out).toMatchObject({ code: 0, stdout: 'Marta moved to Coimbra on 12 May 2024.\n' });
    const first = fake.requests.at(-2)!.body;
    expect(first.tools.map((t: { function: { name: string } }) => t.function.name)).toContain(
      'memory_search',
    );
    const tool = fake.requests.at(-1)!.body.messages.findLast((m: { role: string }) => m.role === 'tool');
    expect(tool.content).toContain('memory/202405/20240512.md:4 — daily note of 2024-05-12');
    expect(tool.content).toContain('Marta moved to Coimbra; her flat is on Rua Direita.');
  }, 60_000);
});

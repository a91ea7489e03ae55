/**
 * Benchmark: how much of each request a provider's prefix cache could serve.
 * A scripted 30-turn chat runs through the real AgentLoop (ContextBuilder,
 * JSONL sessions, file tools, the OpenAI provider) against the fake OpenAI
 * server, on a simulated clock: turns 2–10 minutes apart crossing midnight,
 * tool calls in some turns, two 4,000-character answers, today's daily note appended by the agent every
 * fourth turn, MEMORY.md edited twice by another chat. For each request of
 * the chat it measures the share that is a byte-identical prefix of the
 * chat's previous request (tools, then messages, as serialised), and prints
 * min, median and the share of all prompt characters a prefix cache could
 * serve — for this tree and, side by side in the same run, for the layout
 * before the cache-friendly one (a git worktree of that commit, its own
 * code). Bytes, not time.
 *
 *   npx tsx bench/prompt-cache.ts [--baseline REV] [--turns 30] [--seed 7] [--long-answers 6,17]
 *
 * `--long-answers` names the turns answered with 4,000 characters (`''`: none, every
 * answer 300–1,200 characters).
 *
 * REV defaults to the parent of the commit that introduced the layout (the
 * first commit adding src/agent/prompt-note.ts). Targets: min ≥ 90%,
 * median ≥ 97%. Summaries are held off (a compaction rewrites the history
 * once by design; it is not what this measures).
 */
import { execFile, execFileSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { commonPrefix, type RecordedRequest, startFakeOpenAI } from '../test/fakes/openai-server.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const self = fileURLToPath(import.meta.url);
const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    turns: { type: 'string', default: '30' },
    seed: { type: 'string', default: '7' },
    scenario: { type: 'string' },
    'long-answers': { type: 'string', default: '6,17' },
  },
});
const turns = Number(values.turns);
const seed = Number(values.seed);
if (!Number.isInteger(turns) || turns < 2) throw new RangeError('--turns must be a whole number ≥ 2');
if (!Number.isInteger(seed)) throw new RangeError('--seed must be a whole number');

const TIMEZONE = 'Europe/Lisbon';
const CHAT = { channel: 'telegram', chatId: '1001', senderName: 'Ana' };
const OTHER = { channel: 'telegram', chatId: '2002', senderName: 'Bea' };
const MEMORY_EDITS = new Set([8, 19]);
const TOOL_TURNS = new Set([4, 11, 15, 23, 27]);
/** Turns answered with 4,000 characters (as in the measurement); the others 300–1,200. */
const LONG_ANSWERS = new Set(
  values['long-answers']
    .split(',')
    .filter((t) => t.trim() !== '')
    .map(Number),
);

/** Figures of one layout. Shares are percentages of the request's characters. */
interface Figures extends Shares {
  requests: number;
  promptChars: number;
  /** The same shares on the raw HTTP bodies (their key order as the code sends it). */
  rawBody: Shares;
}

/** Min and median over the chat's requests after its first. */
interface Spread {
  min: number;
  median: number;
}

interface Shares {
  /**
   * How much of the previous request this one begins with, byte for byte: what the layout keeps
   * (the goal: everything but a small trailing part). The targets apply here.
   */
  prefixOfPrevious: Spread;
  /**
   * How much of this request is that prefix. The rest is new by nature — the answer the model
   * just gave and the new message — so a long answer lowers it whatever the layout.
   */
  prefixOfRequest: Spread;
  /** Σ prefix / Σ characters over every request of the chat (the first has none cached). */
  cacheableShare: number;
}

if (values.scenario) {
  process.stdout.write(`${JSON.stringify(await scenario(path.resolve(values.scenario)))}\n`);
} else {
  const rev = values.baseline ?? defaultBaseline();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'magpie-bench-cache-'));
  const tree = path.join(dir, 'tree');
  try {
    execFileSync('git', ['worktree', 'add', '--detach', '--quiet', tree, rev], {
      cwd: root,
      stdio: 'ignore',
    });
    await symlink(path.join(root, 'node_modules'), path.join(tree, 'node_modules'));
    const [current, baseline] = await Promise.all([runScenario(root), runScenario(tree)]);
    const commit = execFileSync('git', ['rev-parse', '--short', rev], { cwd: root }).toString().trim();
    const out = {
      bench: 'prompt-cache',
      turns,
      seed,
      current,
      baseline: { commit, ...baseline },
      targets: { prefixOfPrevious: { min: 90, median: 97 } },
      met: current.prefixOfPrevious.min >= 90 && current.prefixOfPrevious.median >= 97,
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    execFileSync('git', ['worktree', 'remove', '--force', tree], { cwd: root, stdio: 'ignore' });
    await rm(dir, { recursive: true, force: true });
  }
}

/** The parent of the first commit that added the cache-friendly layout. */
function defaultBaseline(): string {
  const added = execFileSync(
    'git',
    ['log', '--diff-filter=A', '--format=%H', '--', 'src/agent/prompt-note.ts'],
    {
      cwd: root,
    },
  )
    .toString()
    .trim()
    .split('\n')
    .at(-1);
  if (!added) throw new RangeError('src/agent/prompt-note.ts is not in the history: pass --baseline REV');
  return `${added}^`;
}

/** Runs the scenario in a child process against the code under `tree` (its own module graph). */
async function runScenario(tree: string): Promise<Figures> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--import',
      'tsx',
      self,
      '--scenario',
      tree,
      '--turns',
      String(turns),
      '--seed',
      String(seed),
      '--long-answers',
      values['long-answers'],
    ],
    { cwd: root, maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(stdout) as Figures;
}

/** The scripted chat through the agent of `tree`; the figures of its requests. */
async function scenario(tree: string): Promise<Figures> {
  const load = (rel: string) => import(pathToFileURL(path.join(tree, 'src', rel)).href);
  const [{ ContextBuilder }, { AgentLoop }, { MemoryStore }, { JsonlSessionStore }, { SkillsLoader }] =
    await Promise.all([
      load('agent/context.ts'),
      load('agent/loop.ts'),
      load('memory/store.ts'),
      load('sessions/jsonl-store.ts'),
      load('skills/loader.ts'),
    ]);
  const [{ ToolRegistry }, { createCoreTools }, { createLoadSkillTool }] = await Promise.all([
    load('tools/registry.ts'),
    load('tools/index.ts'),
    load('tools/load-skill.ts'),
  ]);
  const [{ OpenAIProvider }, { silentLogger }] = await Promise.all([
    load('providers/openai/provider.ts'),
    load('log/index.ts'),
  ]);

  const dir = await mkdtemp(path.join(os.tmpdir(), 'magpie-bench-cache-ws-'));
  const workspace = path.join(dir, 'workspace');
  await cp(path.join(root, 'workspace'), workspace, { recursive: true });
  await mkdir(path.join(workspace, 'sessions'), { recursive: true });
  let clock = new Date('2026-03-14T21:40:00Z');
  const now = () => clock;
  const random = mulberry32(seed);

  /** What the model does on the current turn. */
  let plan: { tool?: { name: string; arguments: string }; replyChars: number; turn: number } = {
    replyChars: 400,
    turn: 0,
  };
  const fake = await startFakeOpenAI({
    responder: (req) => {
      const last = req.body.messages.at(-1);
      if (last.role === 'user' && plan.tool) return { toolCalls: [plan.tool] };
      return { content: prose(plan.replyChars, plan.turn) };
    },
  });
  try {
    const logger = silentLogger();
    const memory = new MemoryStore({ workspace, timezone: TIMEZONE, now });
    const skills = new SkillsLoader({ dir: path.join(workspace, 'skills'), logger });
    // The agent's own tools (the daemon adds subagent, spawn and cron, which need more parts).
    const tools = new ToolRegistry([...createCoreTools({ workspace }), createLoadSkillTool(skills)]);
    const agent = new AgentLoop({
      provider: new OpenAIProvider({
        apiKey: 'bench',
        baseURL: fake.baseURL,
        model: 'gpt-4o-mini',
        maxRetries: 0,
      }),
      tools,
      sessions: new JsonlSessionStore({ dir: path.join(workspace, 'sessions'), logger }),
      context: new ContextBuilder({
        workspace,
        memory,
        skills,
        tools: () => tools.summaries(),
        timezone: TIMEZONE,
        now,
        logger,
      }),
      logger,
      outbound: { publish: async () => undefined },
      workspace,
      maxIterations: 6,
      contextTokens: 1_000_000,
      summarizeAtTokens: 1_000_000,
    });
    const say = (chat: typeof CHAT, content: string, id: string) =>
      agent.processMessage({
        id,
        ...chat,
        senderId: chat.chatId,
        content,
        media: [],
        isGroup: false,
        receivedAt: clock.toISOString(),
        metadata: {},
      });

    for (let turn = 1; turn <= turns; turn += 1) {
      if (MEMORY_EDITS.has(turn)) {
        // Another chat teaches the agent something: it writes MEMORY.md.
        plan = {
          turn,
          replyChars: 60,
          tool: {
            name: 'append_file',
            arguments: JSON.stringify({
              path: 'memory/MEMORY.md',
              content: `- Fact ${turn} from the other chat.\n`,
            }),
          },
        };
        await say(OTHER, `please remember fact ${turn}`, `other-${turn}`);
        clock = new Date(clock.getTime() + 60_000);
      }
      const tool = TOOL_TURNS.has(turn)
        ? {
            name: turn % 2 ? 'read_file' : 'list_dir',
            arguments: JSON.stringify({ path: turn % 2 ? 'SOUL.md' : '.' }),
          }
        : turn % 4 === 0
          ? {
              name: 'append_file',
              arguments: JSON.stringify({
                path: path.relative(workspace, memory.todayPath()),
                content: `- ${clock.toISOString().slice(11, 16)} talked about topic ${turn}\n`,
              }),
            }
          : undefined;
      plan = {
        turn,
        replyChars: LONG_ANSWERS.has(turn) ? 4_000 : 300 + ((turn * 137) % 900),
        ...(tool ? { tool } : {}),
      };
      await say(CHAT, `message ${turn}: ${prose(80 + ((turn * 53) % 200), turn + 100)}`, `chat-${turn}`);
      clock = new Date(clock.getTime() + (2 + Math.floor(random() * 9)) * 60_000);
    }
    await agent.idle();
    const mine = fake.requests.filter((r) =>
      JSON.stringify(r.body.messages?.[0]).includes('Session: telegram:1001'),
    );
    return {
      ...figures(mine.map(canonical)),
      rawBody: shares(figures(mine.map((r) => r.raw))),
    };
  } finally {
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** What a provider caches over: the tools, then the messages, as serialised (the same order for both layouts). */
function canonical(req: RecordedRequest): string {
  return JSON.stringify({ tools: req.body.tools ?? [], messages: req.body.messages });
}

function figures(bodies: string[]): Shares & { requests: number; promptChars: number } {
  const ofPrevious: number[] = [];
  const ofRequest: number[] = [];
  let cached = 0;
  let total = 0;
  bodies.forEach((body, i) => {
    const previous = bodies[i - 1];
    const prefix = previous === undefined ? 0 : commonPrefix(previous, body);
    if (previous !== undefined) {
      ofPrevious.push((prefix / previous.length) * 100);
      ofRequest.push((prefix / body.length) * 100);
    }
    cached += prefix;
    total += body.length;
  });
  return {
    requests: bodies.length,
    prefixOfPrevious: spread(ofPrevious),
    prefixOfRequest: spread(ofRequest),
    cacheableShare: round((cached / Math.max(1, total)) * 100),
    promptChars: total,
  };
}

function spread(values: number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  const median = sorted.length % 2 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { min: round(sorted[0] ?? 0), median: round(median ?? 0) };
}

function shares(f: Shares): Shares {
  return {
    prefixOfPrevious: f.prefixOfPrevious,
    prefixOfRequest: f.prefixOfRequest,
    cacheableShare: f.cacheableShare,
  };
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

/** Deterministic filler text of `chars` characters. */
function prose(chars: number, salt: number): string {
  const words = ['tea', 'river', 'Lisbon', 'garden', 'train', 'book', 'music', 'bread', 'letter', 'window'];
  let out = '';
  for (let i = 0; out.length < chars; i += 1) out += `${words[(i * 7 + salt) % words.length]} `;
  return out.slice(0, chars);
}

/** A small seeded PRNG (mulberry32), so every run takes the same steps. */
function mulberry32(a: number): () => number {
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

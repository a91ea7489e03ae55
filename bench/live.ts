/**
 * Benchmark of live replies. Runs the whole stack in this process
 * (`startRole('start')`: gateway + worker) on its own redis-server, against
 * the fake Bot API (which refuses edits faster than one per 900 ms per chat,
 * as Telegram does) and the fake OpenAI server, and prints one JSON object.
 *
 * Scenarios, each with streaming on and with `MAGPIE_STREAM=off`:
 * - `instant`: the model writes the whole answer at once;
 * - `slow`: a 680-character answer streamed over 5 s in 20 pieces (the issue's measurement).
 *
 * Per scenario: `firstVisibleMs` (p50/p99) from the model's first token (the fake
 * writing its first content chunk) to the fake Bot API receiving the chat's first
 * sendMessage of that turn; for `slow` also `finalMs` (first token → the final
 * formatted message: the HTML edit, or the HTML send) and edits per turn; and
 * `redisPerTurn`: live snapshots published (a pattern subscription on
 * `<prefix>:live:*`) and Redis commands (INFO commandstats delta), raw and net of
 * the idle rate measured just before.
 *
 *   npx tsx bench/live.ts [--turns 200] [--chats 20] [--slow-turns 30] [--slow-chats 10] [--slow-seconds 5]
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { parseConfig } from '../src/app/config.js';
import { startRole } from '../src/app/roles.js';
import { AppError, describeError } from '../src/errors/index.js';
import { silentLogger } from '../src/log/index.js';
import { type FakeReply, lastUserText, startFakeOpenAI } from '../test/fakes/openai-server.js';
import { startRedis } from '../test/fakes/redis-server.js';
import { dmUpdate, startFakeTelegram, type TelegramCall } from '../test/fakes/telegram-server.js';

const USAGE =
  'usage: npx tsx bench/live.ts [--turns N] [--chats N] [--slow-turns N] [--slow-chats N] [--slow-seconds S]';

/** Parsed flags; exits 2 with one line on bad usage. */
function readFlags() {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      options: {
        turns: { type: 'string', default: '200' },
        chats: { type: 'string', default: '20' },
        'slow-turns': { type: 'string', default: '30' },
        'slow-chats': { type: 'string', default: '10' },
        'slow-seconds': { type: 'string', default: '5' },
        help: { type: 'boolean', default: false },
      },
    }));
  } catch (err) {
    process.stderr.write(`bench/live: ${(err as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const number = (name: string, integer: boolean): number => {
    const n = Number(values[name]);
    if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
      const kind = integer ? 'a positive whole number' : 'a positive number';
      process.stderr.write(`bench/live: --${name} "${values[name]}" must be ${kind}\n${USAGE}\n`);
      process.exit(2);
    }
    return n;
  };
  return {
    turns: number('turns', true),
    chats: number('chats', true),
    slowTurns: number('slow-turns', true),
    slowChats: number('slow-chats', true),
    slowMs: Math.round(number('slow-seconds', false) * 1000),
  };
}

const flags = readFlags();
/** The slow model's answer: the issue's 680 characters in 20 pieces. */
const SLOW_CHARS = 680;
const SLOW_PIECES = 20;
/** Telegram's edit pace as the fake enforces it (429 when faster). */
const TELEGRAM_EDIT_INTERVAL_MS = 900;
/** Idle window measured before each scenario, to tell the turns' Redis traffic from the background. */
const IDLE_MS = 2000;

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return Math.round(sorted[Math.max(0, i)]! * 10) / 10;
}
function summary(xs: number[]) {
  const sorted = [...xs].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), n: xs.length };
}
const round1 = (n: number) => Math.round(n * 10) / 10;
function progress(step: string, data: unknown): void {
  process.stderr.write(`bench: ${step} ${JSON.stringify(data)}\n`);
}

/** The answer a turn gets: its tag first (so every preview names its turn), some Markdown, `<tag>-end` last. */
function answerFor(tag: string, chars: number): string {
  const head = `${tag} `;
  const tail = ` ${tag}-end.`;
  let body = '';
  for (let i = 1; body.length < chars; i++) body += `Sentence ${i} of a **streamed** answer. `;
  return `${head}${body.slice(0, Math.max(0, chars - head.length - tail.length)).trimEnd()}${tail}`;
}

/** Total calls per command since the server started (INFO commandstats). */
async function commandStats(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  const out = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}
function statsDelta(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [cmd, n] of after) {
    const d = n - (before.get(cmd) ?? 0);
    if (d > 0) out.set(cmd, d);
  }
  return out;
}
const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

interface TurnRecord {
  tag: string;
  chatId: number;
  /** The slow model answers it (else the instant one). */
  slow: boolean;
  firstTokenAt?: number;
}

interface Scenario {
  name: 'instant' | 'slow';
  stream: boolean;
  turns: number;
  chats: number;
}

const stateRoot = mkdtempSync(path.join(os.tmpdir(), 'magpie-bench-live-'));
const redis = await startRedis();
const telegram = await startFakeTelegram({
  token: '777:bench-token',
  editIntervalMs: TELEGRAM_EDIT_INTERVAL_MS,
});
const turns = new Map<string, TurnRecord>();
const openai = await startFakeOpenAI({
  responder: (req): FakeReply => {
    const tag = /\b(lv\d+)\b/.exec(lastUserText(req))?.[1];
    const turn = tag ? turns.get(tag) : undefined;
    if (!turn) return { content: 'ok' };
    const onFirstPiece = () => {
      turn.firstTokenAt ??= Date.now();
    };
    if (!turn.slow) return { content: answerFor(turn.tag, 120), pieces: 1, onFirstPiece };
    return {
      content: answerFor(turn.tag, SLOW_CHARS),
      pieces: SLOW_PIECES,
      pieceDelayMs: Math.round(flags.slowMs / (SLOW_PIECES - 1)),
      onFirstPiece,
    };
  },
});
const stats = new Redis(redis.url, { maxRetriesPerRequest: 1 });
const owner = { first_name: 'Owner', username: 'owner' };
let nextChat = 1;

const textOf = (call: TelegramCall) => String(call.params.text ?? '');
const chatOf = (call: TelegramCall) => String(call.params.chat_id ?? '');

/** Runs one scenario on a fresh role (its own queue prefix) and measures it. */
async function run(scenario: Scenario, index: number) {
  const prefix = `bench-live-${randomUUID()}`;
  const workspace = mkdtempSync(path.join(stateRoot, 'ws-'));
  const config = parseConfig({
    REDIS_URL: redis.url,
    MAGPIE_QUEUE_PREFIX: prefix,
    MAGPIE_WORKSPACE: workspace,
    MAGPIE_STATE_DIR: mkdtempSync(path.join(stateRoot, 'state-')),
    OPENAI_API_KEY: 'bench-key',
    OPENAI_BASE_URL: openai.baseURL,
    MAGPIE_MODEL: 'fake-model',
    MAGPIE_HEARTBEAT_INTERVAL: '0',
    MAGPIE_STREAM: scenario.stream ? 'on' : 'off',
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    TELEGRAM_ALLOW_FROM: `@${owner.username}`,
  });
  const role = await startRole({
    role: 'start',
    config,
    logger: silentLogger(),
    concurrency: Math.max(16, scenario.chats),
  });
  const snapshots = new Map<string, number>();
  let snapshotsTotal = 0;
  const sub = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  sub.on('pmessage', (_pattern, _channel, message: string) => {
    snapshotsTotal += 1;
    const tag = /\b(lv\d+)\b/.exec(message)?.[1];
    if (tag) snapshots.set(tag, (snapshots.get(tag) ?? 0) + 1);
  });
  try {
    await sub.psubscribe(`${prefix}:live:*`);
    // Warm-up turn (not measured): the first turn pays for connections and lazy loading.
    await oneTurn(`lv9${index}00000`, nextChat++, false);
    const idleBefore = await commandStats(stats);
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const idleCommandsPerSecond = round1(
      total(statsDelta(idleBefore, await commandStats(stats))) / (IDLE_MS / 1000),
    );

    const before = await commandStats(stats);
    const callsFrom = telegram.calls.length;
    const t0 = Date.now();
    const tags: Array<{ tag: string; chatId: number }> = [];
    const perChat = Math.ceil(scenario.turns / scenario.chats);
    const phase = (scenario.name === 'instant' ? 1 : 2) + (scenario.stream ? 0 : 2);
    await Promise.all(
      Array.from({ length: scenario.chats }, async (_, c) => {
        const chatId = nextChat++;
        for (let k = 0; k < perChat; k++) {
          const n = c * perChat + k;
          if (n >= scenario.turns) return;
          const tag = `lv${phase}${String(n).padStart(5, '0')}`;
          tags.push({ tag, chatId });
          await oneTurn(tag, chatId, scenario.name === 'slow');
        }
      }),
    );
    const wallMs = Date.now() - t0;
    const delta = statsDelta(before, await commandStats(stats));
    const calls = telegram.calls.slice(callsFrom);

    const firstVisible: number[] = [];
    const final: number[] = [];
    const edits: number[] = [];
    let formattedEdits = 0;
    const refused = { preview: 0, final: 0 };
    let minEditGapMs = Number.POSITIVE_INFINITY;
    for (const { tag, chatId } of tags) {
      const turn = turns.get(tag)!;
      const mine = calls.filter((c) => chatOf(c) === String(chatId) && textOf(c).includes(tag));
      const firstSend = mine.find((c) => c.method === 'sendMessage');
      const finalCall = mine.find(
        (c) =>
          (c.method === 'sendMessage' || c.method === 'editMessageText') &&
          c.params.parse_mode === 'HTML' &&
          textOf(c).includes(`${tag}-end`),
      );
      if (turn.firstTokenAt === undefined || !firstSend || !finalCall) {
        throw new AppError('INTERNAL', `turn ${tag} has no first token, first send or final message`);
      }
      firstVisible.push(firstSend.at - turn.firstTokenAt);
      final.push(finalCall.at - turn.firstTokenAt);
      const turnEdits = telegram.edits.filter((e) => e.chat_id === String(chatId) && e.text.includes(tag));
      edits.push(turnEdits.filter((e) => e.outcome === 'edited').length);
      formattedEdits += turnEdits.filter((e) => e.outcome === 'edited' && e.parse_mode === 'HTML').length;
      let lastEdited: number | undefined;
      for (const e of turnEdits) {
        if (lastEdited !== undefined) minEditGapMs = Math.min(minEditGapMs, e.at - lastEdited);
        if (e.outcome === 'edited') lastEdited = e.at;
        if (e.outcome === 'failed') refused[e.parse_mode === 'HTML' ? 'final' : 'preview'] += 1;
      }
    }
    const commands = total(delta);
    const n = tags.length;
    const result = {
      stream: scenario.stream,
      turns: n,
      chats: scenario.chats,
      wallMs,
      firstVisibleMs: summary(firstVisible),
      finalMs: summary(final),
      editsPerTurn: {
        mean: round1(edits.reduce((a, b) => a + b, 0) / n),
        max: Math.max(...edits),
        /** Of the accepted edits, those into the final formatted (HTML) form. */
        formattedMean: round1(formattedEdits / n),
        /** Edits the fake refused (429) for coming faster than its pace, over all turns. */
        refused,
        /** Shortest time from an accepted edit to the next edit attempt in the same turn (null: < 2 edits). */
        minGapMs: Number.isFinite(minEditGapMs) ? minEditGapMs : null,
      },
      redisPerTurn: {
        liveSnapshots: round1(snapshotsTotal / n),
        liveSnapshotsMax: Math.max(0, ...tags.map((t) => snapshots.get(t.tag) ?? 0)),
        commands: round1(commands / n),
        commandsNetOfIdle: round1((commands - (idleCommandsPerSecond * wallMs) / 1000) / n),
        idleCommandsPerSecond,
        topCommands: Object.fromEntries(
          [...delta.entries()]
            .sort((a, b) => b[1] - a[1])
            .slice(0, 8)
            .map(([cmd, calls]) => [cmd, round1(calls / n)]),
        ),
      },
    };
    progress(`${scenario.name} stream=${scenario.stream ? 'on' : 'off'}`, {
      firstVisibleMs: result.firstVisibleMs,
      finalMs: result.finalMs,
      snapshots: result.redisPerTurn.liveSnapshots,
      commands: result.redisPerTurn.commands,
    });
    return result;
  } finally {
    sub.disconnect();
    await role.stop();
    rmSync(workspace, { recursive: true, force: true });
  }
}

/** One user message in a DM; resolves once the chat shows the turn's final formatted reply. */
async function oneTurn(tag: string, chatId: number, slow: boolean): Promise<void> {
  turns.set(tag, { tag, chatId, slow });
  telegram.pushUpdate(dmUpdate({ ...owner, id: chatId }, `${tag} please answer`));
  await telegram.waitFor(
    () =>
      telegram.shownMessages(chatId).some((m) => m.parse_mode === 'HTML' && m.text.includes(`${tag}-end`)),
    (slow ? flags.slowMs : 0) + 60_000,
  );
}

const cleanup = async () => {
  stats.disconnect();
  await telegram.close();
  await openai.close();
  await redis.stop();
  rmSync(stateRoot, { recursive: true, force: true });
};
process.once('SIGINT', () => {
  void cleanup().finally(() => process.exit(130));
});

let exitCode = 0;
try {
  const scenarios: Scenario[] = [
    { name: 'instant', stream: true, turns: flags.turns, chats: flags.chats },
    { name: 'instant', stream: false, turns: flags.turns, chats: flags.chats },
    { name: 'slow', stream: true, turns: flags.slowTurns, chats: flags.slowChats },
    { name: 'slow', stream: false, turns: flags.slowTurns, chats: flags.slowChats },
  ];
  // A discarded first round: the process's code warms up (JIT) before any scenario is timed, so the
  // scenario that happens to run first is not the slower one.
  await run(
    { name: 'instant', stream: true, turns: Math.min(flags.turns, 100), chats: flags.chats },
    scenarios.length,
  );
  const results = [];
  for (const [i, s] of scenarios.entries()) results.push(await run(s, i));
  const [instantOn, instantOff, slowOn, slowOff] = results;
  process.stdout.write(
    `${JSON.stringify(
      {
        model: {
          instant: 'whole answer (120 characters) in one chunk',
          slow: `${SLOW_CHARS} characters in ${SLOW_PIECES} pieces over ${flags.slowMs} ms`,
        },
        telegramEditIntervalMs: TELEGRAM_EDIT_INTERVAL_MS,
        instant: { streamOn: instantOn, streamOff: instantOff },
        slow: { streamOn: slowOn, streamOff: slowOff },
      },
      null,
      2,
    )}\n`,
  );
} catch (err) {
  process.stderr.write(`bench/live: ${describeError(err)}\n`);
  exitCode = 1;
} finally {
  await cleanup();
}
process.exit(exitCode);

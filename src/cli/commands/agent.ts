/**
 * `magpie agent`: talk to the agent in-process, no Redis. With -m one message
 * is answered on stdout; without it an interactive prompt runs (history,
 * Ctrl-C cancels the running turn, Ctrl-D or a second Ctrl-C quits).
 * Logs go to stderr at LOG_LEVEL (default warn here), so stdout holds replies only.
 */
import type { Interface } from 'node:readline';
import type { AgentLoop } from '../../agent/loop.js';
import { visionCapable } from '../../agent/model-vision.js';
import type { OutboundSink } from '../../agent/ports.js';
import type { TurnOutcome } from '../../agent/types.js';
import { FileApprovalRules } from '../../approvals/file-rules.js';
import { terminalApprovals } from '../../approvals/terminal.js';
import { streamsTo } from '../../config/index.js';
import type { VoiceConfig } from '../../config/voice.js';
import { AppError, ConfigError, describeError, ExitCode } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import { startMcp } from '../../mcp/start.js';
import { APPROVAL_MODES, type ApprovalMode } from '../../messages/approval.js';
import type { OutboundMessageInput } from '../../messages/messages.js';
import { speakToFile, voiceFileFlag } from '../../voice/voice-file.js';
import { defineCommand } from '../command.js';
import { shedSecretEnvironment } from '../shed-secrets.js';
import { commandConfig, commandEnv, commandLogger, reportShed, WORKSPACE_FLAG } from '../startup.js';
import { TerminalStream } from '../terminal-stream.js';

const HELP = `usage: magpie agent [-m "text"] [--chat ID] [--workspace DIR]

Talks to the agent in this process (no Redis needed).

options:
  -m, --message TEXT   send one message, print the reply and exit
      --chat ID        the conversation to use: session cli:ID (default: cli:default)
      --approval MODE  off, risky or all: which tool calls ask first (default: MAGPIE_APPROVAL
                       on a terminal, off without one; with risky or all and no terminal, a
                       call that would ask is refused, said on stderr: scripts never hang)
      --voice FILE     with -m: also speak the answer (MAGPIE_TTS) and write it to FILE (OGG/Opus)
      --workspace DIR  the workspace folder (overrides MAGPIE_WORKSPACE)
  -h, --help           this help

Without -m an interactive prompt starts: Ctrl-C stops the running turn (or clears
the line), Ctrl-C at an empty prompt twice or Ctrl-D quits.

On a terminal the answer is printed as the model writes it (CLI_STREAM=off or
MAGPIE_STREAM=off: whole replies); a pipe always gets whole replies.

exit codes: 0 ok; 1 a turn failed (the model answered nothing, or the turn stopped
without finishing: step limit, repeated tool calls, context full); 2 configuration
or workspace; 3 model endpoint unreachable or refused; 130 cancelled.
Without -m the exit code is 1 when any turn failed.`;

/** Outcomes of a turn that answered but did not finish what was asked. */
const UNFINISHED: ReadonlySet<TurnOutcome> = new Set(['max_iterations', 'loop', 'context_full']);

export const run = defineCommand({
  name: 'agent',
  help: HELP,
  flags: {
    message: { type: 'string', short: 'm' },
    chat: { type: 'string' },
    approval: { type: 'string' },
    voice: { type: 'string' },
    ...WORKSPACE_FLAG,
  },
  async run({ values }) {
    if (values.message !== undefined && values.message.trim() === '') {
      throw new ConfigError('magpie agent: -m needs some text; see "magpie agent --help"');
    }
    const chat = values.chat ?? 'default';
    if (values.approval !== undefined && !APPROVAL_MODES.includes(values.approval as ApprovalMode)) {
      throw new ConfigError(
        `magpie agent: --approval must be off, risky or all, not "${values.approval}"; see "magpie agent --help"`,
      );
    }
    if (chat.trim() === '') {
      throw new ConfigError('magpie agent: --chat needs an id; see "magpie agent --help"');
    }
    // --workspace beats MAGPIE_WORKSPACE (also one from .env); only warnings unless LOG_LEVEL is set, so stdout holds replies only.
    // Secrets in the environment: re-executes without them, so exec cannot read them in /proc.
    const shed = shedSecretEnvironment();
    const config = commandConfig(values, { llm: true });
    const logger = commandLogger(config, 'quiet');
    reportShed(shed, logger);
    if (values.voice !== undefined && values.message === undefined) {
      throw new ConfigError('magpie agent: --voice goes with -m "text"; see "magpie agent --help"');
    }
    const voiceFile = voiceFileFlag('agent', values.voice, config.voice);
    const { buildAgent } = await import('../../app/build-agent.js');
    // MCP servers of mcp.json, if there is one (nothing of MCP is loaded otherwise); closed before exit.
    const mcp = await startMcp({
      config,
      logger,
      env: commandEnv(values),
      vision: config.llm.models.some((m) => visionCapable(m.model, config.vision)),
    });
    let code: number;
    const rules = new FileApprovalRules(config.stateDir);
    // Asking needs a person at a terminal; without one, approvals are off unless asked for (then: refused).
    const terminal = Boolean(process.stdin.isTTY && process.stdout.isTTY);
    const approval = {
      mode: (values.approval as ApprovalMode | undefined) ?? (terminal ? config.approval.mode : 'off'),
      execNetwork: config.tools.execNetwork,
      rules,
      terminal,
    };
    try {
      const { FileModelChoiceStore } = await import('../../sessions/model-choice-file.js');
      const { agent } = await buildAgent({
        config,
        logger,
        outbound: new TerminalSink(chat, logger),
        // A chat's /model is kept in the state folder, so the next `magpie agent --chat ID` uses it too.
        modelChoices: new FileModelChoiceStore(config.stateDir, logger),
        approvalRules: rules,
        ...(mcp ? { mcp } : {}),
      });
      const sessionKey = `cli:${chat}`;
      const stream =
        process.stdout.isTTY && streamsTo(config, 'cli') ? new TerminalStream(process.stdout) : undefined;
      code = await (values.message === undefined
        ? interactive(agent, sessionKey, stream, approval)
        : once(
            agent,
            values.message,
            sessionKey,
            stream,
            approval,
            voiceFile ? { file: voiceFile, config: config.voice } : undefined,
          ));
    } finally {
      await mcp?.close();
    }
    exitWhenIdle(code);
    return code;
  },
});

/**
 * The HTTP client keeps its connection to the endpoint alive, which would hold
 * this short-lived process open for a while after the answer: once the work is
 * done, exit at the next turn of the event loop (stdout and stderr are
 * synchronous for files and pipes on Linux, so nothing written is lost).
 */
function exitWhenIdle(code: number): void {
  setImmediate(() => process.exit(code)).unref();
}

/** One message: the reply on stdout; Ctrl-C cancels (exit 130); an unfinished turn exits 1. */
async function once(
  agent: AgentLoop,
  text: string,
  sessionKey: string,
  stream: TerminalStream | undefined,
  approval: AgentApproval,
  voice?: { file: string; config: VoiceConfig },
): Promise<number> {
  const controller = new AbortController();
  const onSigint = () => controller.abort();
  process.once('SIGINT', onSigint);
  const approvals = terminalApprovals({
    ...approval,
    stderr: process.stderr,
    ...(approval.terminal ? { ask: (q: string) => askLine(q, stream) } : {}),
  });
  try {
    const result = await agent
      .processDirect(text, sessionKey, { signal: controller.signal, approvals, ...stream?.turnOptions() })
      .catch((err: unknown) => {
        stream?.endLine(); // the error line starts on a line of its own
        throw err;
      });
    if (result.metrics.outcome === 'cancelled') {
      stream?.endLine();
      process.stderr.write('magpie: stopped\n');
      return ExitCode.cancelled;
    }
    if (result.reply !== undefined) printReply(result.reply, stream);
    else stream?.endLine();
    await agent.idle();
    if (voice && !(await spokenTo(voice, result.reply))) return ExitCode.failure;
    return UNFINISHED.has(result.metrics.outcome) ? ExitCode.failure : ExitCode.ok;
  } finally {
    process.off('SIGINT', onSigint);
  }
}

/** `--voice FILE`: the answer spoken into the file; false (said on stderr) when it could not be. */
async function spokenTo(
  voice: { file: string; config: VoiceConfig },
  reply: string | undefined,
): Promise<boolean> {
  try {
    const { buildSpeechEngine } = await import('../../app/build-voice.js');
    const engine = await buildSpeechEngine(voice.config);
    if (!engine) throw new AppError('TTS_FAILED', 'no speech engine is configured (MAGPIE_TTS=off)');
    await speakToFile(reply ?? '', voice.file, engine, voice.config.maxChars);
    return true;
  } catch (err) {
    process.stderr.write(`magpie: the answer was not spoken: ${describeError(err)}\n`);
    return false;
  }
}

/** The reply on stdout: the rest of what streamed, or the whole reply. */
function printReply(reply: string, stream: TerminalStream | undefined): void {
  if (stream) stream.finish(reply);
  else process.stdout.write(`${reply}\n`);
}

/** The interactive prompt. Lines typed during a turn wait their turn. */
async function interactive(
  agent: AgentLoop,
  sessionKey: string,
  stream: TerminalStream | undefined,
  approval: AgentApproval,
): Promise<number> {
  const readline = await import('node:readline');
  const rl: Interface = readline.createInterface({
    input: process.stdin,
    output: process.stdout,
    prompt: 'you> ',
    historySize: 1000,
    terminal: Boolean(process.stdin.isTTY),
  });
  let running: AbortController | undefined;
  let quitArmed = false;
  let failed = false;
  let chain: Promise<void> = Promise.resolve();
  // Piped input ends (and closes readline) while queued turns still run; Node 22+ throws on a prompt after close.
  let closed = false;
  rl.once('close', () => {
    closed = true;
  });
  const prompt = () => {
    if (!closed) rl.prompt();
  };
  // A question waiting for its answer: the next line typed answers it instead of being a message.
  let answering: ((line: string) => void) | undefined;
  const approvals = terminalApprovals({
    ...approval,
    stderr: process.stderr,
    ...(approval.terminal
      ? {
          ask: (question: string) =>
            new Promise<string>((resolve) => {
              stream?.endLine();
              answering = resolve;
              process.stdout.write(question);
            }),
        }
      : {}),
  });

  const turn = async (text: string) => {
    running = new AbortController();
    try {
      const result = await agent.processDirect(text, sessionKey, {
        signal: running.signal,
        approvals,
        ...stream?.turnOptions(),
      });
      if (result.metrics.outcome === 'cancelled') {
        stream?.endLine();
        process.stdout.write('(stopped)\n');
      } else if (result.reply !== undefined) printReply(result.reply, stream);
      else stream?.endLine();
      if (UNFINISHED.has(result.metrics.outcome)) failed = true;
    } catch (err) {
      failed = true;
      stream?.endLine();
      process.stderr.write(`magpie: ${describeError(err)}\n`);
    } finally {
      running = undefined;
    }
    prompt();
  };

  rl.on('SIGINT', () => {
    if (running) {
      running.abort();
      return;
    }
    if (rl.line.length > 0) {
      rl.write(null, { ctrl: true, name: 'u' });
      quitArmed = false;
      return;
    }
    if (quitArmed) {
      rl.close();
      return;
    }
    quitArmed = true;
    process.stdout.write('\n(press Ctrl-C again or Ctrl-D to quit)\n');
    prompt();
  });
  rl.on('line', (line) => {
    quitArmed = false;
    if (answering) {
      const answer = answering;
      answering = undefined;
      answer(line);
      return;
    }
    const text = line.trim();
    if (text === '') {
      prompt();
      return;
    }
    chain = chain.then(() => turn(text));
  });
  process.stdout.write('magpie: type a message (/help for commands, Ctrl-D to quit)\n');
  prompt();
  await new Promise<void>((resolve) => (closed ? resolve() : rl.once('close', resolve)));
  await chain;
  await agent.idle();
  if (process.stdout.isTTY) process.stdout.write('\n');
  return failed ? ExitCode.failure : ExitCode.ok;
}

/** How `magpie agent` asks: the mode, whether a person sits at a terminal, where "always" rules live. */
interface AgentApproval {
  mode: ApprovalMode;
  execNetwork: boolean;
  rules: FileApprovalRules;
  terminal: boolean;
}

/** Asks one question on the terminal (`-m` mode) and resolves the line typed. */
async function askLine(question: string, stream: TerminalStream | undefined): Promise<string> {
  const readline = await import('node:readline/promises');
  stream?.endLine();
  const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
  try {
    return await rl.question(question);
  } finally {
    rl.close();
  }
}

/** The message tool's sends: this chat's go to stdout; other chats cannot be reached from here. */
class TerminalSink implements OutboundSink {
  readonly #chat: string;
  readonly #logger: Logger;

  constructor(chat: string, logger: Logger) {
    this.#chat = chat;
    this.#logger = logger;
  }

  async publish(message: OutboundMessageInput): Promise<void> {
    if (message.channel === 'cli' && message.chatId === this.#chat) {
      process.stdout.write(`${message.content}\n`);
      return;
    }
    this.#logger.warn(
      { channel: message.channel, chatId: message.chatId },
      'message to another chat refused',
    );
    throw new AppError(
      'DELIVERY_PERMANENT',
      `magpie agent can only answer this terminal, not ${message.channel}:${message.chatId} (the daemon can)`,
    );
  }
}

/**
 * `magpie chat`: an interactive prompt through the bus (channel cli). Answers
 * print as they are written (unless MAGPIE_STREAM/CLI_STREAM is off), with the
 * progress line while tools run as a dim status line on a terminal (on stderr
 * otherwise). Ctrl-C during a turn sends /stop; Ctrl-C at an empty prompt or
 * Ctrl-D quits.
 */
import { createInterface } from 'node:readline';
import { onUnsolicited, sendAndWait } from '../../channels/cli/client.js';
import { TerminalReply } from '../../channels/cli/terminal-reply.js';
import { streamsTo } from '../../config/index.js';
import { AppError, describeError, ExitCode } from '../../errors/index.js';
import { agentBusOf } from '../agent-bus.js';
import { parseTimeoutFlag, REPLY_FLAGS } from '../args.js';
import { defineCommand } from '../command.js';
import { withBus } from '../startup.js';

const HELP = `usage: magpie chat [options]

An interactive chat with the running daemon, through the bus (channel cli).
Answers print as they are written; --no-stream (or MAGPIE_STREAM=off) prints whole
replies only. Ctrl-C during a reply stops the turn; Ctrl-C at an empty prompt or
Ctrl-D quits.

options:
  --chat ID          the chat, i.e. session cli:ID (default "default")
  --agent ID         the agent of agents.json that answers (default main)
  --timeout D        how long to wait for each reply, or for the next sign of it
                     while it streams (default 120s)
  --no-stream        print whole replies only
  --workspace DIR    overrides MAGPIE_WORKSPACE
  -h, --help         this help`;

export const run = defineCommand({
  name: 'chat',
  help: HELP,
  flags: REPLY_FLAGS,
  async run({ values }) {
    const timeoutMs = parseTimeoutFlag('chat', values.timeout);
    return withBus(
      values,
      'client',
      async ({ config, bus, logger }) => {
        const chatId = values.chat ?? 'default';
        // --agent: messages (and Ctrl-C's /stop) go to that agent's bus; answers come back through main's.
        const agentBus = await agentBusOf('chat', config, values, logger);
        const target = agentBus ?? bus;
        const stream = values['no-stream'] !== true && streamsTo(config, 'cli');
        // Reminders and helper results arrive on their own, between or during prompts. Subscribed
        // before readline starts, which would otherwise read piped lines before the loop below.
        let prompt = () => {};
        const stopListening = await onUnsolicited(bus, chatId, (m) => {
          process.stdout.write(`\nmagpie> ${m.content}\n`);
          prompt();
        });
        const rl = createInterface({
          input: process.stdin,
          output: process.stdout,
          terminal: Boolean(process.stdin.isTTY),
        });
        let busy = false;
        rl.on('SIGINT', () => {
          if (busy) {
            target
              .cancel(`cli:${chatId}`)
              .catch((err: unknown) => process.stderr.write(`magpie: ${describeError(err)}\n`));
            return;
          }
          if (rl.line === '') rl.close();
          else rl.write(null, { ctrl: true, name: 'u' });
        });
        rl.setPrompt('you> ');
        // Piped input closes readline while its last lines are still answered; Node 22+ throws on a prompt after close.
        let closed = false;
        rl.once('close', () => {
          closed = true;
        });
        const promptIfOpen = (preserveCursor?: boolean) => {
          if (!closed) rl.prompt(preserveCursor);
        };
        prompt = () => promptIfOpen(true);
        try {
          promptIfOpen();
          // The async iterator buffers lines that arrive while a reply is awaited (pasted or piped input).
          for await (const line of rl) {
            if (line.trim() !== '') {
              busy = true;
              const terminal = new TerminalReply({
                out: process.stdout,
                err: process.stderr,
                prefix: 'magpie> ',
                statusInPlace: true,
              });
              try {
                const reply = await sendAndWait(bus, {
                  content: line,
                  chatId,
                  timeoutMs,
                  ...terminal.handlers(stream),
                  ...(agentBus ? { publishTo: agentBus } : {}),
                });
                terminal.final(reply.content);
              } catch (err) {
                terminal.abandon();
                if (!(err instanceof AppError)) throw err;
                process.stderr.write(`magpie: ${describeError(err)}\n`);
              } finally {
                busy = false;
              }
            }
            promptIfOpen();
          }
          return ExitCode.ok;
        } finally {
          rl.close();
          await stopListening();
          await agentBus?.close();
        }
      },
      { traced: true },
    );
  },
});

/** `magpie send -m "text"`: one message through the bus to the running daemon; prints the reply. */
import { sendAndWait } from '../../channels/cli/client.js';
import { ConfigError, ExitCode } from '../../errors/index.js';
import { parseCommandArgs, parseTimeoutFlag } from '../args.js';
import { startCommand } from '../startup.js';

const HELP = `usage: magpie send -m "text" [options]

Sends one message through the bus (channel cli) to the running daemon and prints the reply.

options:
  -m, --message TEXT   the message (required)
  --chat ID            the chat, i.e. session cli:ID (default "default")
  --timeout D          how long to wait for the reply (default 120s)
  --workspace DIR      overrides MAGPIE_WORKSPACE (where the private Redis is recorded)
  -h, --help           this help

exit codes: 0 replied, 1 the turn failed, 2 bad usage or config, 3 Redis or the daemon unreachable`;

const FLAGS = {
  message: { type: 'string', short: 'm' },
  chat: { type: 'string' },
  timeout: { type: 'string' },
  workspace: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseCommandArgs('send', argv, FLAGS);
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    return ExitCode.ok;
  }
  if (values.message === undefined || values.message.trim() === '') {
    throw new ConfigError('magpie send: -m "text" is required; see "magpie send --help"');
  }
  const timeoutMs = parseTimeoutFlag('send', values.timeout);
  const { bus } = await startCommand(values, 'client');
  try {
    const chatId = values.chat ?? 'default';
    const reply = await sendAndWait(bus, {
      content: values.message,
      chatId,
      timeoutMs,
      onMessage: (m) => process.stdout.write(`${m.content}\n`),
    });
    if (reply.kind === 'error') {
      process.stderr.write(`magpie: ${reply.content}\n`);
      return ExitCode.failure;
    }
    process.stdout.write(`${reply.content}\n`);
    return ExitCode.ok;
  } finally {
    await bus.close();
  }
}

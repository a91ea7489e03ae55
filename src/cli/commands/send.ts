/**
 * `magpie send -m "text"`: one message through the bus to the running daemon;
 * prints the answer as it is written (live snapshots) and ends with the whole
 * reply, or only the whole reply with --no-stream or MAGPIE_STREAM=off.
 */
import { sendAndWait } from '../../channels/cli/client.js';
import { TerminalReply } from '../../channels/cli/terminal-reply.js';
import { streamsTo } from '../../config/index.js';
import { ConfigError, ExitCode } from '../../errors/index.js';
import type { OutboundMessage } from '../../messages/messages.js';
import { spokenAudio } from '../../voice/outbound-audio.js';
import { voiceFileFlag, writeVoiceFile } from '../../voice/voice-file.js';
import { agentBusOf } from '../agent-bus.js';
import { parseTimeoutFlag, REPLY_FLAGS } from '../args.js';
import { defineCommand } from '../command.js';
import { withBus } from '../startup.js';

const HELP = `usage: magpie send -m "text" [options]

Sends one message through the bus (channel cli) to the running daemon and prints the
answer as it is written; stdout ends with the whole reply. Progress while tools run
("reading notes/plan.md") goes to stderr.

options:
  -m, --message TEXT   the message (required)
  --chat ID            the chat, i.e. session cli:ID (default "default")
  --agent ID           the agent of agents.json that answers (default main)
  --timeout D          how long to wait for the reply, or for the next sign of it while
                       it streams (default 120s)
  --no-stream          print the whole reply only, when it is done (also MAGPIE_STREAM=off
                       or CLI_STREAM=off)
  --voice FILE         also ask for the answer spoken (the daemon's MAGPIE_TTS) and write it to
                       FILE (OGG/Opus); exit 1 when it could not be spoken (the text is printed)
  --workspace DIR      overrides MAGPIE_WORKSPACE (where the private Redis is recorded)
  -h, --help           this help

exit codes: 0 replied, 1 the turn failed, 2 bad usage or config, 3 Redis or the daemon unreachable`;

export const run = defineCommand({
  name: 'send',
  help: HELP,
  flags: { message: { type: 'string', short: 'm' }, voice: { type: 'string' }, ...REPLY_FLAGS },
  async run({ values }) {
    if (values.message === undefined || values.message.trim() === '') {
      throw new ConfigError('magpie send: -m "text" is required; see "magpie send --help"');
    }
    const timeoutMs = parseTimeoutFlag('send', values.timeout);
    const content = values.message;
    return withBus(
      values,
      'client',
      async ({ config, bus, logger }) => {
        const voiceFile = voiceFileFlag('send', values.voice, config.voice);
        let voice: OutboundMessage | undefined;
        const terminal = new TerminalReply({ out: process.stdout, err: process.stderr });
        const agentBus = await agentBusOf('send', config, values, logger);
        try {
          const stream = values['no-stream'] !== true && streamsTo(config, 'cli');
          const reply = await sendAndWait(bus, {
            content,
            chatId: values.chat ?? 'default',
            timeoutMs,
            ...terminal.handlers(stream),
            ...(agentBus ? { publishTo: agentBus } : {}),
            ...(voiceFile ? { onVoice: (m: OutboundMessage) => (voice = m) } : {}),
          });
          if (reply.kind === 'error') {
            terminal.abandon();
            process.stderr.write(`magpie: ${reply.content}\n`);
            return ExitCode.failure;
          }
          terminal.final(reply.content);
          if (voiceFile) return await writeSpoken(voiceFile, voice);
          return ExitCode.ok;
        } catch (err) {
          terminal.abandon();
          throw err;
        } finally {
          await agentBus?.close();
        }
      },
      { traced: true },
    );
  },
});

/** `--voice FILE`: the spoken answer written to the file, or why there is none on stderr (exit 1). */
async function writeSpoken(file: string, voice: OutboundMessage | undefined): Promise<number> {
  const audio = voice ? spokenAudio(voice) : undefined;
  if (!audio) {
    const why = voice?.metadata.voiceFailed;
    process.stderr.write(
      `magpie: the answer was not spoken: ${typeof why === 'string' ? why : 'no audio came back'}\n`,
    );
    return ExitCode.failure;
  }
  await writeVoiceFile(file, audio.bytes);
  return ExitCode.ok;
}

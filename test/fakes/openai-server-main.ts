/**
 * Runs the fake OpenAI server as a process for benchmarks:
 * `npx tsx test/fakes/openai-server-main.ts --port N --delay-ms 0 [--api-key KEY]`.
 * Prints `{"baseURL":"http://127.0.0.1:N/v1"}` as one line on stdout, answers every chat request with
 * `ok` (after the delay) and stops on SIGINT/SIGTERM.
 */
import { parseArgs } from 'node:util';
import { startFakeOpenAI } from './openai-server.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    'delay-ms': { type: 'string', default: '0' },
    'api-key': { type: 'string' },
  },
});
const port = Number(values.port);
const delayMs = Number(values['delay-ms']);
if (!Number.isInteger(port) || port < 0 || !Number.isFinite(delayMs) || delayMs < 0) {
  process.stderr.write('usage: openai-server-main.ts --port N --delay-ms MS [--api-key KEY]\n');
  process.exit(2);
}

const fake = await startFakeOpenAI({
  port,
  ...(values['api-key'] ? { apiKey: values['api-key'] } : {}),
  responder: () => ({ content: 'ok', delayMs }),
});
process.stdout.write(`${JSON.stringify({ baseURL: fake.baseURL })}\n`);

const stop = () => {
  fake.close().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`fake OpenAI: close failed: ${String(err)}\n`);
      process.exit(1);
    },
  );
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);

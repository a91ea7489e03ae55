/** A pino logger for tests that assert on what was logged. */
import { Writable } from 'node:stream';
import { type Logger, pino } from 'pino';

/** A logger at level info whose records (parsed JSON) land in `lines`. */
export function capturingLogger(): { logger: Logger; lines: { level: number; msg: string }[] } {
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line.trim()) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

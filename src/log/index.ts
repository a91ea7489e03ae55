/**
 * The pino root logger. Secrets are redacted by key path, and every finished
 * line is scrubbed of credentials (URL user info, secret query parameters,
 * token shapes, the configured secret values) wherever they sit: message,
 * fields, `err.message`, `err.stack`, child bindings. Child loggers carry
 * `{ channel, session, job }`. Logs go to stderr so stdout stays for replies.
 */
import { type Logger, pino } from 'pino';
import { textRedactor } from './redact.js';

export type { Logger } from 'pino';
export { REDACTED, redactText, scrubCredentials, secretSpellings, textRedactor } from './redact.js';

/** Key paths whose values never reach a log line. */
export const REDACT_PATHS = [
  'apiKey',
  'token',
  'password',
  'authorization',
  'headers.authorization',
  '*.apiKey',
  '*.token',
  '*.password',
  '*.authorization',
  'config.llm.apiKey',
  'config.channels.*.token',
  'config.dashboard.token',
];

export interface LoggerOptions {
  level?: string;
  /** Human-readable output (a terminal); JSON otherwise. */
  pretty?: boolean;
  /** Where lines go; defaults to stderr (fd 2). */
  destination?: NodeJS.WritableStream | number;
  /**
   * Values never to print in any spelling (API keys, bot tokens, passwords: `secretValues(config)`).
   * URL credentials and known token shapes are scrubbed even when not listed.
   * @defaultValue []
   */
  secrets?: Iterable<string | undefined>;
}

/** Builds the root logger. Pretty output is loaded lazily so JSON mode costs nothing extra. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const base = {
    level: options.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { pid: process.pid },
    // The finished JSON line, before it reaches the destination or the pretty transport.
    hooks: { streamWrite: textRedactor(options.secrets ?? []) },
  };
  if (options.pretty) {
    return pino({
      ...base,
      transport: {
        target: 'pino-pretty',
        options: { destination: 2, colorize: true, ignore: 'pid,hostname' },
      },
    });
  }
  const dest = options.destination ?? 2;
  return pino(base, typeof dest === 'number' ? pino.destination({ fd: dest, sync: true }) : dest);
}

/** A logger that writes nothing, for tests and quiet commands. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/** Removes secret values from free text (tool output, error messages). */
export function redactSecrets(text: string, secrets: Iterable<string | undefined>): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
  }
  return out;
}

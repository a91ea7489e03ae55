/**
 * magpie's secrets kept out of its process environment. Children (redis-server,
 * MCP servers, exec without a sandbox) inherit process.env, and any process of
 * the same user can read `/proc/<pid>/environ`, which holds the environment a
 * process was started with. So `.env` is read into memory, never into
 * process.env, and secrets a daemon found in its environment are handed to its
 * re-executed self (cli/shed-secrets.ts) and held here.
 */

/**
 * Names whose values are secrets: keys, tokens, passwords, passphrases, credentials, OPENAI_*, REDIS_URL,
 * `<CHANNEL>_ACCOUNTS` (named bot accounts: `name=token` pairs), and OTLP exporter headers
 * (`OTEL_EXPORTER_OTLP_[TRACES_]HEADERS`: a collector's key).
 */
const SECRET_NAME =
  /KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|_ACCOUNTS$|^OTEL_EXPORTER_OTLP_.*HEADERS$/i;

/** True when an environment variable's value is a secret (and must not reach a command or a child). */
export function isSecretEnvName(name: string): boolean {
  return SECRET_NAME.test(name) || /^OPENAI_/i.test(name) || name === 'REDIS_URL';
}

let held: Readonly<Record<string, string>> = {};

/** Keeps `values` (secrets this process was handed at re-execution) as part of magpie's environment. */
export function holdSecrets(values: Record<string, string>): void {
  held = { ...held, ...values };
}

/** The secrets held outside process.env (they beat `.env`, as the environment they came from would). */
export function heldSecrets(): Readonly<Record<string, string>> {
  return held;
}

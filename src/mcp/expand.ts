/**
 * `${VAR}` expansion for mcp.json: `env`, `headers`, `args`, `url` and `cwd`
 * values may name variables of magpie's environment (`${GITHUB_TOKEN}`, or
 * `${VAR:-fallback}`). Every value substituted is remembered, so the server's
 * secrets can be redacted from its tools' output and from logs.
 */

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** The outcome of expanding the strings of one server's definition. */
export interface Expansion {
  /** Variables named without a fallback that the environment does not set. */
  missing: Set<string>;
  /** Values that came from the environment (to redact). */
  substituted: Set<string>;
}

/** A fresh, empty Expansion. */
export function newExpansion(): Expansion {
  return { missing: new Set(), substituted: new Set() };
}

/**
 * Replaces each `${NAME}` in `text` with `env[NAME]` (`${NAME:-x}`: x when
 * NAME is unset or empty). An unset NAME without a fallback becomes '' and is
 * recorded in `into.missing`.
 *
 * @example expandVariables('Bearer ${TOKEN}', { TOKEN: 'abc' }, newExpansion()) // 'Bearer abc'
 */
export function expandVariables(text: string, env: NodeJS.ProcessEnv, into: Expansion): string {
  return text.replace(VARIABLE, (_whole, name: string, fallback: string | undefined) => {
    const value = env[name];
    if (value !== undefined && value !== '') {
      into.substituted.add(value);
      return value;
    }
    if (fallback !== undefined) return fallback;
    into.missing.add(name);
    return '';
  });
}

/** Expands every value of a string record (keys are kept as written). */
export function expandRecord(
  record: Readonly<Record<string, string>>,
  env: NodeJS.ProcessEnv,
  into: Expansion,
): Record<string, string> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, expandVariables(v, env, into)]));
}

/**
 * The Node.js versions magpie runs on: 22.16 and newer (24 LTS recommended).
 * 22.16 is the first Node 22 whose built-in `node:sqlite` has FTS5, which the
 * memory search index needs. An older Node stops the command with one line
 * saying which version to install, before anything else loads (Node 20 is
 * past its end of life: no more security fixes).
 */

/** The oldest major version magpie supports. */
export const MIN_NODE_MAJOR = 22;
/** The oldest minor version of {@link MIN_NODE_MAJOR} magpie supports (node:sqlite with FTS5). */
export const MIN_NODE_MINOR = 16;
/** The version the README and set-up scripts install. */
export const RECOMMENDED_NODE_MAJOR = 24;

/**
 * The line to print when `version` (e.g. `20.19.2`) is too old, else undefined.
 *
 * @example nodeTooOld('22.12.0') // "magpie needs Node.js 22.16 or newer (24 LTS recommended); this is Node.js 22.12.0: …"
 */
export function nodeTooOld(version: string = process.versions.node): string | undefined {
  const [major, minor] = version.split('.').map(Number);
  if (
    Number.isInteger(major) &&
    Number.isInteger(minor) &&
    (major! > MIN_NODE_MAJOR || (major === MIN_NODE_MAJOR && minor! >= MIN_NODE_MINOR))
  ) {
    return undefined;
  }
  return (
    `magpie needs Node.js ${MIN_NODE_MAJOR}.${MIN_NODE_MINOR} or newer (${RECOMMENDED_NODE_MAJOR} LTS recommended); ` +
    `this is Node.js ${version}: install Node.js ${RECOMMENDED_NODE_MAJOR}, or run ". scripts/use-node.sh" in the checkout`
  );
}

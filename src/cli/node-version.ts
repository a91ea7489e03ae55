/**
 * The Node.js versions magpie runs on: 22 and newer (24 LTS recommended). An older
 * Node stops the command with one line saying which version to install, before
 * anything else loads (Node 20 is past its end of life: no more security fixes).
 */

/** The oldest major version magpie supports. */
export const MIN_NODE_MAJOR = 22;
/** The version the README and set-up scripts install. */
export const RECOMMENDED_NODE_MAJOR = 24;

/**
 * The line to print when `version` (e.g. `20.19.2`) is too old, else undefined.
 *
 * @example nodeTooOld('20.19.2') // "magpie needs Node.js 22 or newer (24 LTS recommended); this is Node.js 20.19.2: …"
 */
export function nodeTooOld(version: string = process.versions.node): string | undefined {
  const major = Number(version.split('.')[0]);
  if (Number.isInteger(major) && major >= MIN_NODE_MAJOR) return undefined;
  return (
    `magpie needs Node.js ${MIN_NODE_MAJOR} or newer (${RECOMMENDED_NODE_MAJOR} LTS recommended); ` +
    `this is Node.js ${version}: install Node.js ${RECOMMENDED_NODE_MAJOR}, or run ". scripts/use-node.sh" in the checkout`
  );
}

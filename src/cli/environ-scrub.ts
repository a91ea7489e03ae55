/**
 * Blanks secrets where `/proc/<pid>/environ` shows them, in this process's own
 * memory, so no second Node start-up is needed to shed them (shed-secrets.ts).
 *
 * On Linux that file is read straight from the process's memory between the
 * `env_start` and `env_end` addresses of `/proc/self/stat`: the strings the
 * kernel put on the stack at exec, which unsetenv never touches. A process may
 * write its own memory through `/proc/self/mem`, so each secret's value is
 * overwritten there with NUL bytes, and the result is read back: only when
 * `/proc/self/environ` then holds no secret value does this report success.
 * Anything else (another system, a /proc that refuses the write, a layout it
 * does not recognise) returns false and the caller re-executes as before.
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';

/** A variable in the environ block: its name, and where its value starts and ends in the block. */
interface EnvironEntry {
  name: string;
  valueStart: number;
  valueEnd: number;
}

/** The `NAME=value` entries of an environ block (NUL-separated). */
function entries(block: Buffer): EnvironEntry[] {
  const found: EnvironEntry[] = [];
  let start = 0;
  while (start < block.length) {
    let end = block.indexOf(0, start);
    if (end === -1) end = block.length;
    const equals = block.indexOf(0x3d, start);
    if (equals !== -1 && equals < end) {
      found.push({ name: block.toString('latin1', start, equals), valueStart: equals + 1, valueEnd: end });
    }
    start = end + 1;
  }
  return found;
}

/** `env_start` and `env_end` of /proc/self/stat (fields 50 and 51, Linux 3.5+), or undefined. */
function environAddresses(): { start: number; end: number } | undefined {
  const stat = readFileSync('/proc/self/stat', 'latin1');
  // The command name (field 2) is in parentheses and may hold spaces: count from its end.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const start = Number(fields[47]);
  const end = Number(fields[48]);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start <= 0 || end <= start) {
    return undefined;
  }
  return { start, end };
}

/** True when no variable the predicate names has a value left in this process's /proc environ (a blanked value is NULs, so it reads as empty). */
function environClean(isSecret: (name: string) => boolean): boolean {
  return entries(readFileSync('/proc/self/environ')).every(
    (e) => !isSecret(e.name) || e.valueEnd === e.valueStart,
  );
}

/**
 * Overwrites, in this process's memory, the values `/proc/self/environ` shows for
 * the variables `isSecret` names, and checks that it no longer shows them.
 * Take the values out of process.env first: they are gone from memory after this.
 *
 * @returns true when /proc/self/environ was read back holding none of them; false
 *   (nothing learnt, nothing thrown) where this cannot be done.
 */
export function scrubEnviron(isSecret: (name: string) => boolean): boolean {
  if (process.platform !== 'linux') return false;
  try {
    const addresses = environAddresses();
    if (!addresses) return false;
    const block = readFileSync('/proc/self/environ');
    // The block must be exactly the memory between the two addresses, or the offsets below mean nothing.
    if (block.length !== addresses.end - addresses.start) return false;
    const secrets = entries(block).filter((e) => isSecret(e.name) && e.valueEnd > e.valueStart);
    if (secrets.length === 0) return true;
    const memory = openSync('/proc/self/mem', 'r+');
    try {
      for (const e of secrets) {
        const length = e.valueEnd - e.valueStart;
        writeSync(memory, Buffer.alloc(length), 0, length, addresses.start + e.valueStart);
      }
    } finally {
      closeSync(memory);
    }
    return environClean(isSecret);
  } catch {
    // No /proc, no permission to write our own memory (some sandboxes): the caller re-executes.
    return false;
  }
}

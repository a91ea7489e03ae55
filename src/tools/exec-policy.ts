/**
 * What `exec` refuses and what it hides: a deny list of destructive
 * commands (checked before anything runs) and the scrubbing of secrets from
 * the environment the command sees.
 */

/** One denied pattern and the reason the model is told. */
interface DenyRule {
  pattern: RegExp;
  reason: string;
}

/** Start of a command: line start, after a separator, a subshell or `sudo`/`exec`-style prefixes. */
const AT_COMMAND = String.raw`(?:^|[;&|({\n\x60]|\$\()\s*(?:(?:sudo|doas|exec|nohup|command|env|time|nice)(?:\s+-\S+)*\s+)*`;

const DENY_RULES: DenyRule[] = [
  {
    pattern: new RegExp(String.raw`${AT_COMMAND}(?:/\S*/)?(?:shutdown|reboot|halt|poweroff)\b`, 'm'),
    reason: 'shutting down or rebooting the machine',
  },
  {
    pattern: new RegExp(String.raw`${AT_COMMAND}(?:/\S*/)?(?:init|telinit)\s+[06]\b`, 'm'),
    reason: 'shutting down or rebooting the machine',
  },
  {
    pattern: /\bsystemctl\s+(?:\S+\s+)*(?:poweroff|reboot|halt|kexec|suspend|hibernate)\b/,
    reason: 'shutting down or rebooting the machine',
  },
  { pattern: /\bmkfs(?:\.\w+)?\b|\bmke2fs\b|\bwipefs\b/, reason: 'formatting a disk' },
  { pattern: /\bdd\b[^;&|\n]*\bif=/, reason: 'raw disk copies with dd' },
  {
    pattern: /\b(?:fdisk|sfdisk|parted|shred)\b[^;&|\n]*\/dev\//,
    reason: 'rewriting a disk device',
  },
  {
    pattern: />\s*\/dev\/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|mapper\/)/,
    reason: 'writing to a disk device',
  },
  {
    pattern: /:\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}/,
    reason: 'a fork bomb',
  },
  {
    pattern: /\b(\w+)\s*\(\s*\)\s*\{[^}]*\b\1\s*\|\s*\1\s*&/,
    reason: 'a fork bomb',
  },
  {
    pattern:
      /\bch(?:mod|own|grp)\s+(?:\S+\s+)*(?:-[a-zA-Z]*R[a-zA-Z]*|--recursive)\s+(?:\S+\s+)*\/(?:\*)?(?=\s|$|;|&|\|)/,
    reason: 'changing permissions or owners of the whole filesystem',
  },
  {
    pattern: /\bmv\s+(?:\S+\s+)*\/(?:\*)?(?=\s|$|;|&|\|)/,
    reason: 'moving the filesystem root',
  },
];

/** True when the arguments after an `rm` ask for both recursive and forced removal. */
function isRecursiveForcedRm(args: string): boolean {
  let recursive = false;
  let force = false;
  for (const token of args.trim().split(/\s+/)) {
    if (token === '--') break;
    if (token === '--recursive') recursive = true;
    else if (token === '--force') force = true;
    else if (/^-[a-zA-Z]+$/.test(token)) {
      if (/[rR]/.test(token)) recursive = true;
      if (token.includes('f')) force = true;
    }
  }
  return recursive && force;
}

const RM_CALL = /(?:^|[\s;&|({\x60]|\$\()(?:\S*\/)?rm\s+([^;&|\n)\x60]*)/g;

/**
 * The reason `command` is refused, or undefined when it may run.
 *
 * @example
 * denyReason('rm -rf build')   // → 'recursive forced delete (rm -rf)'
 * denyReason('ls -la')         // → undefined
 */
export function denyReason(command: string): string | undefined {
  const normalised = command.replace(/\\\n/g, ' ');
  for (const match of normalised.matchAll(RM_CALL)) {
    if (isRecursiveForcedRm(match[1] ?? '')) return 'recursive forced delete (rm -rf)';
  }
  return DENY_RULES.find((rule) => rule.pattern.test(normalised))?.reason;
}

/** Names of environment variables that may hold secrets. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH/i;

/** True when an environment variable must not reach a command. */
export function isSecretEnvName(name: string): boolean {
  return SECRET_NAME.test(name) || /^OPENAI_/i.test(name) || name === 'REDIS_URL';
}

/** A copy of `env` without variables whose names suggest secrets, OPENAI_* and REDIS_URL. */
export function scrubEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && !isSecretEnvName(name)) out[name] = value;
  }
  return out;
}

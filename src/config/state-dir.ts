/**
 * magpie's own state folder (config.stateDir) and the secrets kept in it:
 * folders are made owner-only (0700), secret files owner-read/write only
 * (0600) and created once, atomically, so two processes starting together
 * agree on one value and a reader never sees a half-written file.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { AppError } from '../errors/index.js';

/** Owner-only folder mode. */
export const PRIVATE_DIR_MODE = 0o700;
/** Owner read/write file mode. */
export const PRIVATE_FILE_MODE = 0o600;

/** Makes `dir` (and missing parents) and sets it to 0700, also when it already existed. */
export function ensurePrivateDir(dir: string): string {
  try {
    mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    chmodSync(dir, PRIVATE_DIR_MODE);
  } catch (err) {
    throw new AppError('INTERNAL', `cannot make the private folder ${dir}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return dir;
}

/** Writes `text` to `file` with mode 0600 through a temporary file and a rename (replaces it atomically). */
export function writePrivateFile(file: string, text: string): void {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(temp, text, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw new AppError('INTERNAL', `cannot write ${file}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * The secret kept in `file`, created with `create()` the first time. The
 * first writer wins (a hard link never replaces an existing file), so two
 * processes starting at once read the same value. An existing file is reset
 * to mode 0600.
 */
export function readOrCreateSecret(file: string, create: () => string = randomSecret): string {
  const existing = readSecret(file);
  if (existing !== undefined) return existing;
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(temp, `${create()}\n`, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
    linkSync(temp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new AppError('INTERNAL', `cannot create ${file}: ${(err as Error).message}`, { cause: err });
    }
    // another process created it first: theirs is the one
  } finally {
    rmSync(temp, { force: true });
  }
  const value = readSecret(file);
  if (value === undefined) throw new AppError('INTERNAL', `${file} is empty: remove it to make a new one`);
  return value;
}

/** 32 random bytes as 64 hex characters. */
export function randomSecret(): string {
  return randomBytes(32).toString('hex');
}

function readSecret(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new AppError('INTERNAL', `cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
  chmodSync(file, PRIVATE_FILE_MODE);
  const value = text.trim();
  if (value === '') throw new AppError('INTERNAL', `${file} is empty: remove it to make a new one`);
  return value;
}
